"""The machine's spawn and stop over a fake launcher: the answer waits for the link, the limit
refuses in words, a stop is SIGTERM then SIGKILL after the bound; the machine's RPCs seal their
answers with the machine's cipher."""

from __future__ import annotations

import itertools
import secrets
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.bridge.app.machine import MachineRpc
from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.errors import ClaudeNotFoundError
from happy_launcher.spawn.dirs import SpawnSettings, write_settings
from happy_launcher.spawn.spawner import Spawner

pytestmark = pytest.mark.anyio
BOUND = 5.0


@dataclass
class FakeChild:
    pid: int
    obeys_term: bool = True
    signals: list[int] = field(default_factory=list)
    done: anyio.Event = field(default_factory=anyio.Event)

    async def wait(self) -> int:
        await self.done.wait()
        return 0

    def signal(self, sig: int) -> None:
        self.signals.append(sig)
        if sig == signal.SIGKILL or self.obeys_term:
            self.done.set()


@dataclass
class FakeLauncher:
    obeys_term: bool = True
    started: list[tuple[list[str], Path, FakeChild]] = field(default_factory=list)
    pids: itertools.count[int] = field(default_factory=lambda: itertools.count(100))
    on_start: anyio.Event = field(default_factory=anyio.Event)

    async def start(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path) -> FakeChild:
        child = FakeChild(next(self.pids), self.obeys_term)
        self.started.append((list(argv), cwd, child))
        self.on_start.set()
        return child

    async def next_start(self) -> FakeChild:
        await self.on_start.wait()
        self.on_start = anyio.Event()
        return self.started[-1][2]


def no_claude() -> Path:
    raise ClaudeNotFoundError("Claude Code not found: install it")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    write_settings(tmp_path, SpawnSettings((tmp_path / "work",), limit=2))
    return tmp_path / "work"


@asynccontextmanager
async def running(spawner: Spawner) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(spawner.run)
        yield
        tg.cancel_scope.cancel()


async def spawn_linked(
    spawner: Spawner, launcher: FakeLauncher, params: dict[str, Any], happy_id: str
) -> dict[str, Any]:
    answer: list[dict[str, Any]] = []

    async def ask() -> None:
        answer.append(await spawner.spawn(params))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        child = await launcher.next_start()
        assert not answer  # not before the session is linked
        spawner.linked(child.pid, happy_id)
    return answer[0]


async def test_spawn_answers_once_linked_then_refuses_past_the_limit(tmp_path: Path, work: Path) -> None:
    launcher = FakeLauncher()
    spawner = Spawner(tmp_path, {}, launcher, lambda: Path("/bin/claude"))
    with anyio.fail_after(BOUND):
        async with running(spawner):
            params = {"directory": str(work), "permissionMode": "plan", "modelMode": "opus"}
            success = await spawn_linked(spawner, launcher, params, "h1")
            assert success == {"type": "success", "sessionId": "h1"}
            argv, cwd, _ = launcher.started[0]
            assert argv[-6:] == ["claude", "--happy-remote", "--permission-mode", "plan", "--model", "opus"]
            assert cwd == work
            await spawn_linked(spawner, launcher, {"directory": str(work)}, "h2")
            refused = await spawner.spawn({"directory": str(work)})
            assert refused == {"type": "error", "errorMessage": refused["errorMessage"]}
            assert refused["errorMessage"].startswith("limit reached: 2 sessions")
            assert len(launcher.started) == 2
            assert await spawner.stop("h1")
            await spawn_linked(spawner, launcher, {"directory": str(work)}, "h3")  # room again


async def test_a_stop_kills_after_the_bound_and_only_what_was_spawned(tmp_path: Path, work: Path) -> None:
    launcher = FakeLauncher(obeys_term=False)
    spawner = Spawner(tmp_path, {}, launcher, lambda: Path("/bin/claude"), stop_bound=0.05)
    with anyio.fail_after(BOUND):
        async with running(spawner):
            await spawn_linked(spawner, launcher, {"directory": str(work)}, "h1")
            assert not await spawner.stop("other")
            assert await spawner.stop("h1")
            assert launcher.started[0][2].signals == [signal.SIGTERM, signal.SIGKILL]
            assert not await spawner.stop("h1")  # ended: nothing left to stop


async def test_refusals_in_words(tmp_path: Path, work: Path) -> None:
    launcher = FakeLauncher()
    spawner = Spawner(tmp_path, {}, launcher, no_claude)
    with anyio.fail_after(BOUND):
        async with running(spawner):
            ask = await spawner.spawn({"directory": str(work / "new")})
            assert ask == {"type": "requestToApproveDirectoryCreation", "directory": str(work / "new")}
            missing = await spawner.spawn({"directory": str(work)})
            assert missing["errorMessage"] == "Claude missing: Claude Code not found: install it"
            codex = await spawner.spawn({"directory": str(work), "agent": "codex"})
            assert codex["errorMessage"] == "this machine starts Claude sessions only, not codex"
            outside = await spawner.spawn({"directory": str(tmp_path)})
            assert outside["errorMessage"].startswith("not allowed:")
    assert launcher.started == []


async def test_a_session_that_ends_before_it_is_linked_is_an_error(tmp_path: Path, work: Path) -> None:
    launcher = FakeLauncher()
    spawner = Spawner(tmp_path, {}, launcher, lambda: Path("/bin/claude"))
    with anyio.fail_after(BOUND):
        async with running(spawner):
            answer: list[dict[str, Any]] = []

            async def ask() -> None:
                answer.append(await spawner.spawn({"directory": str(work)}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                (await launcher.next_start()).done.set()
    assert answer[0]["errorMessage"].startswith("the session ended as it started: no output (log: ")


async def test_machine_rpcs_open_and_seal_with_the_machine_cipher(tmp_path: Path, work: Path) -> None:
    cipher = SessionCipher("dataKey", secrets.token_bytes(32))
    launcher = FakeLauncher()
    spawner = Spawner(tmp_path, {}, launcher, lambda: Path("/bin/claude"))
    rpc = MachineRpc("m1", cipher, spawner)
    assert rpc.methods() == ["m1:spawn-happy-session", "m1:stop-session"]
    assert rpc.serves("m1:stop-session") and not rpc.serves("s1:abort")
    with anyio.fail_after(BOUND):
        async with running(spawner):
            answer: list[str] = []

            async def ask() -> None:
                answer.append(await rpc.call("m1:spawn-happy-session", cipher.seal({"directory": str(work)})))

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                spawner.linked((await launcher.next_start()).pid, "h1")
            assert cipher.open(answer[0]) == {"type": "success", "sessionId": "h1"}
            stopped = await rpc.call("m1:stop-session", cipher.seal({"sessionId": "h1"}))
            assert cipher.open(stopped) == {"message": "Session stopped"}
            again = cipher.open(await rpc.call("m1:stop-session", cipher.seal({"sessionId": "h1"})))
            assert again == {"error": "h1 is not a session this machine started, or it ended"}
            garbled = cipher.open(await rpc.call("m1:spawn-happy-session", "not sealed"))
            assert garbled == {"error": "the request is not one this machine understands"}
