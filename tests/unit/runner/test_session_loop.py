"""The session loop (runner/loop.py) with stand-in launchers: who runs after a switch, what a
failing remote mode hands back, how the session ends, and what a signal does at any moment."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from happy_launcher.runner.loop import run_session
from happy_launcher.session.launcher import Launcher, LauncherExit, Run
from happy_launcher.session.ports import Mode
from happy_launcher.session.signals import RunSignals
from happy_launcher.store.sessions import SessionStore

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]  # a signal not acted on hangs


class Step:
    """A launcher that names the Claude session, then ends as told (or raises)."""

    def __init__(self, log: list[str], name: str, outcome: LauncherExit | Exception) -> None:
        self.log, self.name, self.outcome = log, name, outcome

    async def run(self, session: Run | None) -> LauncherExit:
        assert session is not None
        self.log.append(self.name)
        session.get().set_claude_session("c-1", "startup", None)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


class Script:
    """`Modes`: the launchers a switch gets, in order."""

    def __init__(self, log: list[str], *steps: tuple[Mode, LauncherExit | Exception]) -> None:
        self.log, self.steps = log, list(steps)
        self.asked: list[tuple[Mode, str]] = []

    def launcher(self, mode: Mode, claude_session_id: str) -> Launcher:
        self.asked.append((mode, claude_session_id))
        want, outcome = self.steps.pop(0)
        assert want == mode
        return Step(self.log, f"{mode}{len(self.asked)}", outcome)


class Told:
    def __init__(self) -> None:
        self.modes: list[Mode] = []

    def switching(self, to: Mode) -> None:
        self.modes.append(to)


def status(home: Path) -> str:
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
        return session.status


async def test_switches_alternate_modes_on_the_same_claude_session(tmp_path: Path) -> None:
    log: list[str] = []
    modes = Script(log, ("remote", LauncherExit("switch")), ("local", LauncherExit("exited", code=0)))
    told = Told()
    ref = Run(tmp_path, tmp_path)
    exit = await run_session(ref, Step(log, "local0", LauncherExit("switch")), modes=modes, switching=told)
    assert exit == LauncherExit("exited", code=0)
    assert log == ["local0", "remote1", "local2"]
    assert modes.asked == [("remote", "c-1"), ("local", "c-1")] and told.modes == ["remote", "local"]
    assert status(tmp_path) == "completed"


async def test_remote_mode_failing_after_a_switch_hands_the_session_back_to_the_tui(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log: list[str] = []
    modes = Script(
        log, ("remote", RuntimeError("no conversation")), ("local", LauncherExit("exited", code=0))
    )
    ref = Run(tmp_path, tmp_path)
    exit = await run_session(ref, Step(log, "local0", LauncherExit("switch")), modes=modes)
    assert exit.reason == "exited" and log == ["local0", "remote1", "local2"]
    assert "remote mode failed (no conversation); back to local mode" in capsys.readouterr().err


async def test_a_first_launcher_failing_fails_the_session(tmp_path: Path) -> None:
    ref = Run(tmp_path, tmp_path)
    with pytest.raises(RuntimeError):
        await run_session(ref, Step([], "remote0", RuntimeError("boom")), mode="remote", modes=Script([]))
    assert status(tmp_path) == "failed"


async def test_without_modes_a_switch_ends_the_run(tmp_path: Path) -> None:
    ref = Run(tmp_path, tmp_path)
    exit = await run_session(ref, Step([], "local0", LauncherExit("switch")))
    assert exit.reason == "switch" and status(tmp_path) == "completed"


# --- signals: the run's, in the launchers and between them (issue 16 §2a) -----------------------


class Signals:
    """The run's signals from a test: `kill(sig)` as if the process had received it."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[signal.Signals](10)
        self.run = RunSignals(receiver=self._open)
        self.caught: tuple[signal.Signals, ...] = ()

    @contextmanager
    def _open(self, *signals: signal.Signals) -> Iterator[AsyncIterator[signal.Signals]]:
        self.caught = signals
        yield self._receive

    def kill(self, sig: signal.Signals) -> None:
        self._send.send_nowait(sig)


class Starting:
    """A launcher that, once it runs, never gets on its feet (the SDK starting) and passes on no
    signal; `started` once it runs, `cancelled` once it was stopped."""

    def __init__(self) -> None:
        self.started, self.cancelled = anyio.Event(), False

    async def run(self, session: Run | None) -> LauncherExit:
        try:
            self.started.set()
            await anyio.sleep_forever()
        finally:
            self.cancelled = True
        raise AssertionError("not reached")


class StoppingForSwitch:
    """The TUI being stopped for a switch when a signal comes: it passes the signal on, and still
    says `switch`."""

    def __init__(self) -> None:
        self.listening = anyio.Event()
        self.got: list[signal.Signals] = []

    async def run(self, session: Run | None) -> LauncherExit:
        assert session is not None
        session.get().set_claude_session("c-1", "startup", None)
        with session.receive_signals(signal.SIGTERM, signal.SIGHUP) as signals:
            self.listening.set()
            async for sig in signals:
                self.got.append(sig)
                break
        return LauncherExit("switch")


class Modes:
    def __init__(self, *launchers: Launcher) -> None:
        self.launchers = list(launchers)

    def launcher(self, mode: Mode, claude_session_id: str) -> Launcher:
        return self.launchers.pop(0)


async def run_with(signals: Signals, ref: Run, first: Launcher, modes: Modes) -> LauncherExit:
    ref.signals = signals.run
    async with anyio.create_task_group() as tg:
        await tg.start(signals.run.serve)
        exit = await run_session(ref, first, modes=modes)
        tg.cancel_scope.cancel()
    return exit


async def test_a_signal_while_the_next_launcher_starts_stops_it_and_ends_the_run(tmp_path: Path) -> None:
    signals, starting = Signals(), Starting()
    ref = Run(tmp_path, tmp_path)
    async with anyio.create_task_group() as tg:

        async def kill_once_started() -> None:
            await starting.started.wait()
            signals.kill(signal.SIGTERM)

        tg.start_soon(kill_once_started)
        exit = await run_with(signals, ref, Step([], "local0", LauncherExit("switch")), Modes(starting))
    assert exit == LauncherExit("aborted", code=143) and starting.cancelled
    assert status(tmp_path) == "cancelled"
    assert set(signals.caught) >= {signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT}


async def test_a_signal_to_a_launcher_stopping_for_a_switch_abandons_the_switch(tmp_path: Path) -> None:
    signals, stopping, after = Signals(), StoppingForSwitch(), Starting()
    ref = Run(tmp_path, tmp_path)
    async with anyio.create_task_group() as tg:

        async def kill_once_listening() -> None:
            await stopping.listening.wait()
            signals.kill(signal.SIGHUP)

        tg.start_soon(kill_once_listening)
        exit = await run_with(signals, ref, stopping, Modes(after))
    assert stopping.got == [signal.SIGHUP]  # passed on to the launcher that listens
    assert exit == LauncherExit("aborted", code=129)
    assert not after.started.is_set()  # no switch
    assert status(tmp_path) == "cancelled"


async def test_a_signal_before_the_first_launcher_runs_keeps_it_from_running(tmp_path: Path) -> None:
    signals, first = Signals(), Starting()
    ref = Run(tmp_path, tmp_path)
    ref.signals = signals.run
    async with anyio.create_task_group() as tg:
        await tg.start(signals.run.serve)
        signals.kill(signal.SIGQUIT)  # e.g. while the control socket is being set up
        await anyio.wait_all_tasks_blocked()  # the run has taken it: no launcher to stop yet
        exit = await run_session(ref, first, modes=Modes())
        tg.cancel_scope.cancel()
    assert exit == LauncherExit("aborted", code=131)
    assert first.cancelled  # stopped at its first step
