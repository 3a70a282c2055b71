"""WAL checkpoints off the delivery path.

SQLite's automatic checkpoint runs inside a commit, once the WAL passes 1000 pages (every ~170
envelope commits): three `fdatasync`s, 17-24 ms (over 100 ms on a busy disk) added to the
envelope that happens to trigger it. The store raises that threshold to `WAL_BURST` (16 MB) on
its writing connection and this thread checkpoints instead, on its own connection: PASSIVE, so
it never waits for (or blocks) the writer, and sqlite3 releases the GIL meanwhile. It sleeps
until `CHECKPOINT_COMMITS` commits wait in the WAL: a session commits a few times a second, and
a checkpoint after each idle second (its `fdatasync`s, the thread's wake-ups) cost ~0.1 ms of
CPU per record. Then it waits until the store has been idle for a moment: a checkpoint's
`fdatasync`s still hold up the writer's next commit on the same disk (by 30-60 ms, measured
while a 100 MB history streams), so they are kept out of bursts of commits, except once per
`max_delay` while commits never pause. But a PASSIVE checkpoint beside a writer that never
pauses never catches up, and the WAL only starts over once one has: the in-line one past
`WAL_BURST`, run by the writer between two of its own commits, does (a replayed 780 MB
transcript grew the WAL to 10 GB without it). Readers beside the burst can still keep those
from completing; past `WAL_RESTART_AT` the writer waits for them (`restart_if_grown`). A commit
is durable (against a crash of happy) as soon as it is in the WAL: checkpoints only keep the
WAL from growing.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from happy_launcher.store import warn

CHECKPOINT_COMMITS = 64  # commits (~1 MB of WAL at a session's pace) before a checkpoint is due
CHECKPOINT_IDLE = 1.0  # ... then seconds without a commit before it runs
CHECKPOINT_MAX_DELAY = 10.0  # ... or this long after the first commit not yet checkpointed
WAL_SIZE_LIMIT = 64 << 20  # bytes: the most the WAL may hold (tests/unit/store/test_wal_bound.py)
WAL_BURST = 16 << 20  # bytes of WAL past which a commit checkpoints in line (PASSIVE)
WAL_RESTART_AT = 32 << 20  # ... and past which it waits for readers and restarts the WAL
RESTART_WAIT_MS = 100  # the longest a commit waits for readers so (a reader reads in pages)


def restart_if_grown(conn: sqlite3.Connection, wal: Path, busy_timeout: float) -> None:
    """After a commit on the writing connection `conn`: when passive checkpoints have not kept
    the WAL under `WAL_RESTART_AT` (readers kept them from completing), a RESTART checkpoint:
    it waits for the readers (at most `RESTART_WAIT_MS`) and the next commit starts the WAL
    over (and truncates it to `journal_size_limit`). Its failure is only logged: the commit
    before it stands."""
    try:
        if wal.stat().st_size <= WAL_RESTART_AT:
            return
        conn.execute(f"PRAGMA busy_timeout = {RESTART_WAIT_MS}")
        try:
            conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    except (OSError, sqlite3.Error) as exc:
        warn("%s: the WAL could not be restarted (%s); retried after the next commit", wal, exc)


class Checkpointer:
    """One background thread per writing store; `poke()` after commits, `close()` at the end."""

    def __init__(
        self,
        path: Path,
        *,
        commits: int = CHECKPOINT_COMMITS,
        idle: float = CHECKPOINT_IDLE,
        max_delay: float = CHECKPOINT_MAX_DELAY,
        busy_timeout: float = 5.0,
    ) -> None:
        self._path = path
        self._commits = commits
        self._idle = idle
        self._max_delay = max_delay
        self._busy_timeout = busy_timeout
        self._wanted = threading.Event()  # a commit since the thread last looked
        self._closing = threading.Event()
        self._done = threading.Condition()
        self.pokes = 0  # commits reported (from the store's thread only)
        self.covered = 0  # the pokes before the start of the last checkpoint that ran
        self.runs = 0  # checkpoints run
        self._thread = threading.Thread(target=self._run, name="happy-checkpoint", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Something was committed: once enough was, checkpoint when the store is idle."""
        self.pokes += 1
        # `covered` is the thread's, read without its lock: a stale value only delays this.
        if self.pokes - self.covered >= self._commits and not self._wanted.is_set():
            self._wanted.set()  # set: nothing to do, and no lock taken

    def wait_covered(self, pokes: int, timeout: float) -> bool:
        """Block until a checkpoint has run that started after `pokes` pokes (tests)."""
        with self._done:
            return self._done.wait_for(lambda: self.covered >= pokes, timeout)

    def close(self) -> None:
        """Stop the thread (the store's own close then checkpoints what is left)."""
        self._closing.set()
        self._wanted.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, timeout=self._busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            warn("%s: no background checkpoints (%s); the WAL grows until exit", self._path, exc)
            return
        try:
            failed = False
            while self._wanted.wait() and self._settled():
                upto = self.pokes
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    if not failed:  # once: the next round may well succeed
                        warn("%s: background checkpoint failed: %s", self._path, exc)
                    failed = True
                with self._done:
                    self.covered = upto
                    self.runs += 1
                    self._done.notify_all()
        finally:
            conn.close()

    def _settled(self) -> bool:
        """Wait until no commit came for `idle` s (or `max_delay` passed); False when closing."""
        deadline = time.monotonic() + self._max_delay
        while True:
            self._wanted.clear()
            if self._closing.wait(self._idle):
                return False
            if not self._wanted.is_set() or time.monotonic() >= deadline:
                return True
