"""The session loop (session/loop.py) with stand-in launchers: who runs after a switch, what a
failing remote mode hands back, and how the session ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from happy_launcher.session.control_types import Mode
from happy_launcher.session.launcher import Launcher, LauncherExit, SessionRef
from happy_launcher.session.loop import run_session
from happy_launcher.session.store import SessionStore

pytestmark = pytest.mark.anyio


class Step:
    """A launcher that names the Claude session, then ends as told (or raises)."""

    def __init__(self, log: list[str], name: str, outcome: LauncherExit | Exception) -> None:
        self.log, self.name, self.outcome = log, name, outcome

    async def run(self, session: SessionRef | None) -> LauncherExit:
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
    ref = SessionRef(tmp_path, tmp_path)
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
    ref = SessionRef(tmp_path, tmp_path)
    exit = await run_session(ref, Step(log, "local0", LauncherExit("switch")), modes=modes)
    assert exit.reason == "exited" and log == ["local0", "remote1", "local2"]
    assert "remote mode failed (no conversation); back to local mode" in capsys.readouterr().err


async def test_a_first_launcher_failing_fails_the_session(tmp_path: Path) -> None:
    ref = SessionRef(tmp_path, tmp_path)
    with pytest.raises(RuntimeError):
        await run_session(ref, Step([], "remote0", RuntimeError("boom")), mode="remote", modes=Script([]))
    assert status(tmp_path) == "failed"


async def test_without_modes_a_switch_ends_the_run(tmp_path: Path) -> None:
    ref = SessionRef(tmp_path, tmp_path)
    exit = await run_session(ref, Step([], "local0", LauncherExit("switch")))
    assert exit.reason == "switch" and status(tmp_path) == "completed"
