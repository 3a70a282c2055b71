"""The sessions started without a terminal, on disk: one `HAPPY_HOME_DIR/spawned/<pid>.json` each
(its pid with the kernel's start time of it, so a reused pid is never taken for it; our session id
once it is known; its log). Whoever started one (the daemon or `happy web`) writes it, so the limit
counts every live one, and a daemon started again can still stop the ones it started before."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import anyio

from happy_launcher.home.files import write_private
from happy_launcher.home.procs import ProcessId

SPAWNED_DIR = "spawned"
LOCK_NAME = ".lock"


@dataclass(frozen=True, slots=True)
class SpawnedEntry:
    pid: int
    start: int | None  # clock ticks after boot (home/procs.py)
    log: str
    session_id: str | None = None  # None until its control socket has named it
    model: str | None = None  # as started: `happy attach` hands it back with the same ones
    permission_mode: str | None = None

    @property
    def owner(self) -> ProcessId:
        return ProcessId(self.pid, self.start)


class Registry:
    def __init__(self, home: Path, alive: Callable[[ProcessId], bool]) -> None:
        self._dir = home / SPAWNED_DIR
        self._alive = alive
        self._one_here = anyio.Lock()

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """No other start, in this process or another (the daemon and `happy web` share the
        limit), between counting the live ones and adding a new one."""
        async with self._one_here:  # so that at most one thread waits on the file lock
            fd = await anyio.to_thread.run_sync(self._lock)
            try:
                yield
            finally:
                os.close(fd)

    def _lock(self) -> int:
        self._dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self._dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held by another process for the few ms of a launch
        return fd

    def add(self, entry: SpawnedEntry) -> None:
        write_private(self._dir / f"{entry.pid}.json", json.dumps(asdict(entry)).encode())

    def named(self, entry: SpawnedEntry, session_id: str) -> SpawnedEntry:
        named = replace(entry, session_id=session_id)
        self.add(named)
        return named

    def remove(self, entry: SpawnedEntry) -> None:
        path = self._dir / f"{entry.pid}.json"
        kept = self._read(path)
        if kept is not None and kept.owner == entry.owner:  # not a newer process with the same pid
            path.unlink(missing_ok=True)

    def live(self) -> list[SpawnedEntry]:
        """Every spawned session still running; the entries of ended ones are dropped."""
        found: list[SpawnedEntry] = []
        with contextlib.suppress(OSError):
            for path in self._dir.glob("*.json"):
                entry = self._read(path)
                if entry is not None and self._alive(entry.owner):
                    found.append(entry)
                else:
                    path.unlink(missing_ok=True)
        return found

    def of(self, owner: ProcessId) -> SpawnedEntry | None:
        """The entry of this very process, if it was spawned."""
        entry = self._read(self._dir / f"{owner.pid}.json")
        return entry if entry is not None and entry.owner == owner else None

    def find(self, session_id: str) -> SpawnedEntry | None:
        return next((e for e in self.live() if e.session_id == session_id), None)

    @staticmethod
    def _read(path: Path) -> SpawnedEntry | None:
        try:
            data = json.loads(path.read_text())
            return SpawnedEntry(
                int(data["pid"]), data["start"], str(data["log"]), data["session_id"],
                data.get("model"), data.get("permission_mode"),
            )  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            return None
