"""The spawner's parts, faked: children that end when told, processes by pid and start time,
control sockets that answer once a test says the session is up, a store of ended sessions."""

from __future__ import annotations

import itertools
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from happy_launcher.errors import ClaudeNotFoundError, SessionEndedError
from happy_launcher.home.procs import ProcessId
from happy_launcher.spawn.spawner import Ports, Spawner


@dataclass
class FakeChild:
    pid: int
    done: anyio.Event = field(default_factory=anyio.Event)

    async def wait(self) -> int:
        await self.done.wait()
        return 0


@dataclass
class FakeSystem:
    """Launcher, processes and control sockets at once: they share the children."""

    obeys_term: bool = True
    send_failures: int = 0
    started: list[tuple[list[str], Path, FakeChild]] = field(default_factory=list)
    children: dict[int, FakeChild] = field(default_factory=dict)
    up: dict[int, str] = field(default_factory=dict)  # pid -> its session id, once answering
    signals: list[tuple[int, int]] = field(default_factory=list)
    sent: list[tuple[int, str, str]] = field(default_factory=list)
    stored: dict[str, tuple[str, str | None, bool]] = field(default_factory=dict)
    pids: itertools.count[int] = field(default_factory=lambda: itertools.count(100))
    launched: anyio.Event = field(default_factory=anyio.Event)
    epoch: int = 0  # another value: every pid now belongs to another process (reused)

    # Launcher
    async def start(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path) -> FakeChild:
        child = FakeChild(next(self.pids))
        self.children[child.pid] = child
        self.started.append((list(argv), cwd, child))
        self.launched.set()
        return child

    async def next_start(self) -> FakeChild:
        """The next child started (or the last, if none was waited for since)."""
        await self.launched.wait()
        self.launched = anyio.Event()
        return self.started[-1][2]

    # Processes
    def start_time(self, pid: int) -> int | None:
        return self.epoch + pid * 10

    def alive(self, owner: ProcessId) -> bool:
        child = self.children.get(owner.pid)
        return child is not None and not child.done.is_set() and owner.start == self.start_time(owner.pid)

    def signal(self, owner: ProcessId, sig: int) -> None:
        """As the real one: never to a process that merely reuses the pid."""
        if self.alive(owner):
            self.signals.append((owner.pid, sig))
            if sig == signal.SIGKILL or self.obeys_term:
                self.children[owner.pid].done.set()

    async def gone(self, owner: ProcessId, within: float) -> bool:
        child = self.children.get(owner.pid)
        if child is None or owner.start != self.start_time(owner.pid):
            return True
        with anyio.move_on_after(within):
            await child.done.wait()
        return child.done.is_set()

    # Control
    async def ready(self, pid: int) -> str | None:
        return self.up.get(pid)

    async def send(self, pid: int, message_id: str, text: str) -> None:
        self.sent.append((pid, message_id, text))
        if self.send_failures:
            self.send_failures -= 1
            raise SessionEndedError("the session closed the connection")

    # Stored
    def find(self, session_id: str) -> tuple[str, str | None, bool] | None:
        return self.stored.get(session_id)

    def ports(self) -> Ports:
        return Ports(self, self, self, self)


def no_claude() -> Path:
    raise ClaudeNotFoundError("Claude Code not found: install it")


def fake_spawner(home: Path, system: FakeSystem, **bounds: float) -> Spawner:
    return Spawner(home, {}, system.ports(), lambda: Path("/bin/claude"), **bounds)


@asynccontextmanager
async def running(spawner: Spawner) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(spawner.run)
        yield
        tg.cancel_scope.cancel()
