"""The session store's connection: one SQLite connection serialised by a lock, its read and
write transactions, and the background checkpointer of its WAL (`checkpoint.py`)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Self

from happy_launcher.errors import StoreError
from happy_launcher.store.checkpoint import CHECKPOINT_IDLE, Checkpointer
from happy_launcher.store.schema import store_error


class StoreConnection:
    """Sync API over one connection, serialised by a lock so any thread may call it."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: Path,
        *,
        busy_timeout: float = 5.0,
        checkpoint_idle: float = CHECKPOINT_IDLE,
    ) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.Lock()
        self.path = path
        self._busy_timeout = busy_timeout
        self._checkpoint_idle = checkpoint_idle
        self._wal = False  # set once the journal mode is known: checkpoints are for WAL only
        self.checkpointer: Checkpointer | None = None  # started by the first write
        self._next_seq: dict[str, int] = {}  # per session, after this connection's last commit

    def close(self) -> None:
        with self._lock:
            if self.checkpointer is not None:
                self.checkpointer.close()
                self.checkpointer = None
            if self._conn is not None:
                self._conn.close()  # the last connection to close checkpoints the rest
                self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def data_version(self) -> int:
        """A number that changes when another connection (of any process) has committed since
        this one last asked: a cheap look for change, with no table read."""
        with self._read() as conn:
            (version,) = conn.execute("PRAGMA data_version").fetchone()
        return int(version)

    # --- transactions -------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._connection()
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front: a deferred transaction that reads and then
        # writes can fail with SQLITE_BUSY at once, without waiting for the busy timeout.
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
                self._committed()
            except BaseException as exc:
                if conn.in_transaction:
                    with suppress(sqlite3.Error):  # the original error is the one to report
                        conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise store_error(self.path, exc) from exc
                raise

    def _committed(self) -> None:
        if self._wal:
            if self.checkpointer is None:
                self.checkpointer = Checkpointer(
                    self.path, idle=self._checkpoint_idle, busy_timeout=self._busy_timeout
                )
            self.checkpointer.poke()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the session store {self.path} is closed (a bug in happy: please report it)")
        return self._conn
