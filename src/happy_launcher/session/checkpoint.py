"""WAL checkpoints off the delivery path.

SQLite's automatic checkpoint runs inside a commit, once the WAL passes 1000 pages (every ~170
envelope commits): three `fdatasync`s, 17-24 ms (over 100 ms on a busy disk) added to the
envelope that happens to trigger it. The store turns it off on its writing connection and this
thread checkpoints instead, on its own connection, at most once per `interval` after commits:
PASSIVE, so it never waits for (or blocks) the writer, and sqlite3 releases the GIL meanwhile.
A commit is durable (against a crash of happy) as soon as it is in the WAL: checkpoints only
keep the WAL from growing.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

CHECKPOINT_INTERVAL = 1.0
_LOG = logging.getLogger("happy_launcher.store")


class Checkpointer:
    """One background thread per writing store; `poke()` after commits, `close()` at the end."""

    def __init__(
        self, path: Path, *, interval: float = CHECKPOINT_INTERVAL, busy_timeout: float = 5.0
    ) -> None:
        self._path = path
        self._interval = interval
        self._busy_timeout = busy_timeout
        self._wanted = threading.Event()
        self._closing = threading.Event()
        self._done = threading.Condition()
        self.rounds = 0  # checkpoints run (for tests and figures)
        self._thread = threading.Thread(target=self._run, name="happy-checkpoint", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Something was committed: checkpoint soon (at most once per interval)."""
        if not self._wanted.is_set():  # the usual case between rounds: no lock taken
            self._wanted.set()

    def wait_round(self, after: int, timeout: float) -> bool:
        """Block until more than `after` rounds have run (tests); False on timeout."""
        with self._done:
            return self._done.wait_for(lambda: self.rounds > after, timeout)

    def close(self) -> None:
        """Stop the thread (the store's own close then checkpoints what is left)."""
        self._closing.set()
        self._wanted.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, timeout=self._busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            _LOG.warning(
                "%s: no background checkpoints (%s); the WAL grows until happy exits", self._path, exc
            )
            return
        try:
            failed = False
            while self._wanted.wait() and not self._closing.is_set():
                self._wanted.clear()
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    if not failed:  # once: the next round may well succeed
                        _LOG.warning("%s: background checkpoint failed: %s", self._path, exc)
                    failed = True
                with self._done:
                    self.rounds += 1
                    self._done.notify_all()
                self._closing.wait(self._interval)
        finally:
            conn.close()
