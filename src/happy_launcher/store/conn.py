"""The session store's connection: one SQLite connection serialised by a lock, its opening
(settings and schema), its read and write transactions, and the background checkpointer of its
WAL (`checkpoint.py`)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Self

from happy_launcher.errors import StoreError
from happy_launcher.home.dirs import HOME_ENV
from happy_launcher.store import warn
from happy_launcher.store.checkpoint import CHECKPOINT_IDLE, WAL_BURST, Checkpointer, restart_if_grown
from happy_launcher.store.schema import MIGRATIONS, SCHEMA_VERSION, create_private, store_error


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
        self._wal_path = path.with_name(path.name + "-wal")
        self.checkpointer: Checkpointer | None = None  # started by the first write
        self._next_seq: dict[str, int] = {}  # per session, after this connection's last commit

    @classmethod
    def _open_file(cls, path: Path, busy_timeout: float, checkpoint_idle: float) -> Self:
        create_private(path)
        try:
            # isolation_level=None: we issue BEGIN IMMEDIATE ourselves (see `_write`).
            conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise store_error(path, exc) from exc
        store = cls(conn, path, busy_timeout=busy_timeout, checkpoint_idle=checkpoint_idle)
        try:
            store._setup()
        except BaseException:
            store.close()
            raise
        return store

    def _setup(self) -> None:
        with self._read() as conn:
            (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode != "wal":  # e.g. some network file systems; still correct, just less concurrent
                warn("session store %s runs in %s journal mode, not WAL", self.path, mode)
            self._wal = mode == "wal"
            conn.execute("PRAGMA synchronous = NORMAL")
            # In line only past WAL_BURST (see checkpoint.py): what keeps the WAL bounded while
            # commits never pause, as the background checkpoints wait for a pause.
            (page,) = conn.execute("PRAGMA page_size").fetchone()
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_BURST // page}")
            # A WAL grown by a burst (a 100 MB history sent) shrinks back once checkpointed.
            conn.execute(f"PRAGMA journal_size_limit = {WAL_BURST}")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
        # Only a migration takes the write lock, so opening never waits for a busy writer.
        if version != SCHEMA_VERSION:
            self._migrate()

    def _migrate(self) -> None:
        with self._write() as conn:
            (version,) = conn.execute("PRAGMA user_version").fetchone()  # again: under the lock
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer happy (schema {version}, this one knows "
                    f"{SCHEMA_VERSION}): upgrade happy or set {HOME_ENV} to another directory"
                )
            for migration in MIGRATIONS[version:]:
                for statement in migration:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _on(self, session_id: str) -> Iterator[Self]:
        """The store that holds the session's data, for the time of the block: this one, or
        the session's own database (`OwnDatabases`, store/layout.py)."""
        yield self

    @contextmanager
    def _session_read(self, session_id: str) -> Iterator[sqlite3.Connection]:
        with self._on(session_id) as data, data._read() as conn:
            yield conn

    @contextmanager
    def _session_write(self, session_id: str) -> Iterator[sqlite3.Connection]:
        with self._on(session_id) as data, data._write() as conn:
            yield conn

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
                self._committed(conn)
            except BaseException as exc:
                if conn.in_transaction:
                    with suppress(sqlite3.Error):  # the original error is the one to report
                        conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise store_error(self.path, exc) from exc
                raise

    def _committed(self, conn: sqlite3.Connection) -> None:
        if self._wal:
            if self.checkpointer is None:
                self.checkpointer = Checkpointer(
                    self.path, idle=self._checkpoint_idle, busy_timeout=self._busy_timeout
                )
            self.checkpointer.poke()
            restart_if_grown(conn, self._wal_path, self._busy_timeout)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the session store {self.path} is closed (a bug in happy: please report it)")
        return self._conn
