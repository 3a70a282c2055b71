"""The spawner over fakes: a start returns once the session's control socket answers, its first
prompt sent there under one message id; the limit counts what the registry on disk holds, whoever
started it; a resume continues an ended session's Claude conversation; a stop is SIGTERM, then
SIGKILL to the group after the bound, and works for a spawner started again."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest

from happy_launcher.spawn.dirs import SpawnRefused, SpawnSettings, write_settings
from happy_launcher.spawn.spawner import NeedsCreation, Spawner, SpawnRequest, Started
from tests.unit.spawn.fakes import FakeSystem, fake_spawner, no_claude, running

pytestmark = pytest.mark.anyio
BOUND = 5.0


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    write_settings(tmp_path, SpawnSettings((tmp_path / "work",), limit=2))
    return tmp_path / "work"


async def start_up(spawner: Spawner, system: FakeSystem, request: SpawnRequest, session: str) -> Started:
    """Starts `request`; its session answers as `session` once the child is there."""
    result: list[Started] = []

    async def ask() -> None:
        result.append(await spawner.start(request))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        child = await system.next_start()
        assert not result  # not before its socket answers
        system.up[child.pid] = session
    return result[0]


async def test_a_start_returns_once_the_socket_answers_and_sends_the_first_prompt(
    tmp_path: Path, work: Path
) -> None:
    system = FakeSystem(send_failures=1)
    spawner = fake_spawner(tmp_path, system)
    request = SpawnRequest(str(work), prompt="hello", model="opus", permission_mode="plan")
    with anyio.fail_after(BOUND):
        async with running(spawner):
            started = await start_up(spawner, system, request, "s1")
    argv, cwd, child = system.started[0]
    assert argv[-6:] == ["claude", "--happy-remote", "--permission-mode", "plan", "--model", "opus"]
    assert cwd == work and "hello" not in argv
    assert started.session_id == "s1" and started.pid == child.pid
    assert started.log.parent == tmp_path / "spawned"
    [(first, id1, text), (again, id2, _)] = system.sent  # one failed try, then the same id again
    assert (first, again, text) == (child.pid, child.pid, "hello") and id1 == id2
    [entry] = spawner.registry.live()
    assert (entry.pid, entry.session_id, entry.log) == (child.pid, "s1", str(started.log))
    assert (entry.model, entry.permission_mode) == ("opus", "plan")  # for `happy attach`'s hand-back
    assert spawner.registry.of(entry.owner) == entry
    assert spawner.registry.of(entry.owner._replace(start=-1)) is None  # the pid, now another's


async def test_the_limit_counts_every_live_spawned_session_on_disk(tmp_path: Path, work: Path) -> None:
    system = FakeSystem()
    first, second = fake_spawner(tmp_path, system), fake_spawner(tmp_path, system)  # daemon and page
    with anyio.fail_after(BOUND):
        async with running(first), running(second):
            await start_up(first, system, SpawnRequest(str(work)), "s1")
            await start_up(second, system, SpawnRequest(str(work)), "s2")
            with pytest.raises(SpawnRefused, match=r"^limit reached: 2 sessions .* \(at most 2\)"):
                await first.start(SpawnRequest(str(work)))
            assert len(system.started) == 2
            assert await first.stop("s2")  # started by the other one
            await start_up(first, system, SpawnRequest(str(work)), "s3")  # room again


async def test_starts_at_the_same_instant_never_pass_the_limit_together(tmp_path: Path, work: Path) -> None:
    system = FakeSystem()
    daemon, page = fake_spawner(tmp_path, system), fake_spawner(tmp_path, system)
    outcomes: list[str] = []

    async def ask(spawner: Spawner) -> None:
        try:
            await spawner.start(SpawnRequest(str(work)))
            outcomes.append("started")
        except SpawnRefused:
            outcomes.append("refused")

    async def answer_every_start() -> None:
        while True:
            await system.launched.wait()
            system.launched = anyio.Event()
            for _, _, child in system.started:
                system.up.setdefault(child.pid, f"s{child.pid}")

    with anyio.fail_after(BOUND):
        async with running(daemon), running(page), anyio.create_task_group() as tg:
            tg.start_soon(answer_every_start)
            async with anyio.create_task_group() as asks:
                for spawner in (daemon, page, daemon):  # limit 2
                    asks.start_soon(ask, spawner)
            tg.cancel_scope.cancel()
    assert sorted(outcomes) == ["refused", "started", "started"]
    assert len(system.started) == 2


async def test_a_stop_kills_after_the_bound_even_from_a_spawner_started_again(
    tmp_path: Path, work: Path
) -> None:
    system = FakeSystem(obeys_term=False)
    with anyio.fail_after(BOUND):
        async with running(before := fake_spawner(tmp_path, system)):
            started = await start_up(before, system, SpawnRequest(str(work)), "s1")
        again = fake_spawner(tmp_path, system, stop_bound=0.05)  # the daemon, restarted
        assert not await again.stop("other")
        assert await again.stop("s1")
    assert system.signals == [(started.pid, signal.SIGTERM), (started.pid, signal.SIGKILL)]
    assert again.registry.live() == []
    assert not await again.stop("s1")  # ended: nothing left to stop


async def test_a_reused_pid_is_not_a_spawned_session(tmp_path: Path, work: Path) -> None:
    system = FakeSystem()
    with anyio.fail_after(BOUND):
        async with running(spawner := fake_spawner(tmp_path, system)):
            started = await start_up(spawner, system, SpawnRequest(str(work)), "s1")
    assert [e.session_id for e in spawner.registry.live()] == ["s1"]
    system.epoch = 1  # its pid now names another process
    assert not await spawner.stop("s1") and system.signals == []
    assert spawner.registry.live() == []
    assert started.pid in system.children


async def test_refusals_in_words(tmp_path: Path, work: Path) -> None:
    system = FakeSystem()
    spawner = Spawner(tmp_path, {}, system.ports(), no_claude)
    with anyio.fail_after(BOUND):
        async with running(spawner):
            with pytest.raises(NeedsCreation) as ask:
                await spawner.start(SpawnRequest(str(work / "new")))
            assert ask.value.directory == str(work / "new")
            with pytest.raises(SpawnRefused, match=r"^Claude missing: Claude Code not found: install it$"):
                await spawner.start(SpawnRequest(str(work)))
            with pytest.raises(SpawnRefused, match=r"^not allowed:"):
                await spawner.start(SpawnRequest(str(tmp_path)))
    assert system.started == []


async def test_a_session_that_ends_before_its_socket_answers_is_refused(tmp_path: Path, work: Path) -> None:
    system = FakeSystem()
    spawner = fake_spawner(tmp_path, system)
    refused: list[str] = []

    async def ask() -> None:
        with pytest.raises(SpawnRefused) as why:
            await spawner.start(SpawnRequest(str(work)))
        refused.append(str(why.value))

    with anyio.fail_after(BOUND):
        async with running(spawner), anyio.create_task_group() as tg:
            tg.start_soon(ask)
            (await system.next_start()).done.set()
    assert refused[0].startswith("the session ended as it started: no output (log: ")
    assert spawner.registry.live() == []


async def test_a_session_silent_past_the_bound_is_killed_and_refused(tmp_path: Path, work: Path) -> None:
    system = FakeSystem()
    spawner = fake_spawner(tmp_path, system, start_bound=0.05)
    with anyio.fail_after(BOUND):
        async with running(spawner):
            with pytest.raises(SpawnRefused, match="did not answer on its control socket within 0 s"):
                await spawner.start(SpawnRequest(str(work)))
    assert system.signals == [(system.started[0][2].pid, signal.SIGKILL)]


async def test_resume_continues_an_ended_session_and_refuses_a_running_or_unknown_one(
    tmp_path: Path, work: Path
) -> None:
    system = FakeSystem()
    system.stored = {"ended": (str(work), "c-1", False), "live": (str(work), "c-2", True)}
    spawner = fake_spawner(tmp_path, system)
    with anyio.fail_after(BOUND):
        async with running(spawner):
            with pytest.raises(SpawnRefused, match=r"^session live is running: there is nothing to resume$"):
                await spawner.resume("live")
            with pytest.raises(SpawnRefused, match=r"^no session nope on this machine$"):
                await spawner.resume("nope")
            result: list[Started] = []

            async def ask() -> None:
                result.append(await spawner.resume("ended", model="sonnet"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                system.up[(await system.next_start()).pid] = "ended"
    argv, cwd, _ = system.started[0]
    assert argv[-4:] == ["--model", "sonnet", "--resume", "c-1"] and cwd == work
    assert result[0].session_id == "ended"
