"""The live transcript scanner: incremental reads of every file of a session, woken by inotify.

Cost per appended record does not depend on file size: each wake-up reads only the bytes after
each file's offset (Happy re-read whole files on every change and every 3 s). A large backlog (a
resumed session's history) is read in batches of about BATCH_BYTES, yielding to the event loop
between batches: memory stays flat and hooks are handled at once (issue 7 §2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus

from happy_launcher.claude.records import Record
from happy_launcher.claude.session_files import NOTHING_KNOWN, SessionFiles
from happy_launcher.claude.watch import Watcher

Deliver = Callable[[list[Record]], None]  # called in the event loop: never blocks
# Re-read now and then: a path that could not be watched (watch limit, not there yet) only
# delays records. Once every path is watched or would be heard arriving, only a fault could
# hide a change: the re-read is a rare safety net, not a wake-up per second of every session.
SAFETY_POLL = 1.0
SAFETY_POLL_HEARD = 10.0
# About 2-10 ms of mapping and storing: the loop is never blocked for long.
BATCH_BYTES = 128 << 10


def safety_poll(watcher: Watcher, interval: float = SAFETY_POLL) -> float:
    """The longest wait before everything is read again: `interval`, or `SAFETY_POLL_HEARD`
    if longer once the watcher hears every path."""
    return max(interval, SAFETY_POLL_HEARD) if watcher.hears_all() else interval


class TranscriptScanner:
    """Drives a live `SessionFiles` (which owns the files, offsets and dedupe keys): re-reads
    when the watcher wakes it, when a main transcript is added, when held records are due, and
    at the safety poll. Owns only that loop; the caller owns the watcher and its closing."""

    def __init__(
        self,
        files: SessionFiles,
        watcher: Watcher,
        *,
        poll_interval: float = SAFETY_POLL,
        batch_bytes: int = BATCH_BYTES,
    ) -> None:
        self.files = files
        self._watcher = watcher
        self._poll_interval = poll_interval
        self._batch_bytes = batch_bytes
        self._dirs = self._directories()
        self._mains = frozenset(files.paths)

    def add_main(self, path: Path, *, known: Mapping[Path, int] = NOTHING_KNOWN) -> None:
        """Also watch this main transcript (a new Claude session id); earlier ones stay watched.
        `known`: see `SessionFiles.add_main`."""
        if self.files.add_main(path, known=known):
            self._dirs = self._directories()
            self._mains = frozenset(self.files.paths)
            self._watcher.wake()  # read it now (a woken watcher makes the next read a full one)

    def scan(self, *, final: bool = False) -> list[Record]:
        """The next batch of what is new right now (`files.behind`: there is more); `final`
        once Claude has exited (nothing is held back, and nothing is waited for: no watches)."""
        if not final:
            self._watcher.watch(self._dirs, self._mains)
        # After a pass cut short by its budget, or at the end, everything is read again.
        changed = None if final or self.files.behind else self._watcher.changes()
        return list(self.files.read_new(final=final, max_bytes=self._batch_bytes, changed=changed))

    def final_batches(self) -> Iterator[list[Record]]:
        """Everything left once Claude has exited, batch by batch."""
        while True:
            yield self.scan(final=True)
            if not self.files.behind:
                return

    async def run(
        self, deliver: Deliver, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Deliver batches of new records until cancelled. Started once the watches are set.
        Once cancelled (Claude has exited) the watches are dropped: the final scans do not wait.
        A watcher that can call back reads in the event loop's callbacks, not in this task
        (see `Watcher.listen`); `deliver`'s error ends the run either way."""
        self._watcher.watch(self._dirs, self._mains)
        task_status.started()
        try:
            failed: list[Exception] = []
            stop = anyio.Event()

            def listener() -> None:
                try:
                    within = self._read(deliver)
                except Exception as exc:
                    self._watcher.listen(None)
                    failed.append(exc)
                    stop.set()
                    return
                if within is None:
                    self._watcher.wake()  # called again soon, after the others' turn
                else:
                    self._watcher.arm(within)

            if self._watcher.listen(listener):
                listener()  # what is there now
                await stop.wait()
                raise failed[0]
            while True:
                if (within := self._read(deliver)) is None:
                    await anyio.lowlevel.checkpoint()  # others run between batches; then read on
                else:
                    await self._watcher.wait(within)
        finally:
            self._watcher.listen(None)
            self._watcher.unwatch()

    def _read(self, deliver: Deliver) -> float | None:
        """One pass: read and deliver what is new; the longest wait before the next pass
        (None: more is there now, after the others' turn)."""
        batch = self.scan()
        if batch:
            deliver(batch)
        if self.files.behind:
            return None
        poll = safety_poll(self._watcher, self._poll_interval)
        held = self.files.hold_wait()
        return poll if held is None else min(held, poll)

    def _directories(self) -> frozenset[Path]:
        """Each session's dir and its subagents dir: changes in either can mean new records or
        new files. The main files are watched by themselves (`_mains`): the project dir they
        are in is shared with other sessions, whose appends must not wake this one. The
        watcher skips those that do not exist (yet)."""
        dirs: set[Path] = set()
        for path in self.files.paths:
            session_dir = path.with_suffix("")
            dirs.update((session_dir, session_dir / "subagents"))
        return frozenset(dirs)
