"""`happy attach` (runner/attach.py) over fakes: which session it takes, how it ends the detached
run, and when the TUI's end hands the session back to a run without a terminal."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from happy_launcher.control.views import SessionView
from happy_launcher.errors import (
    AmbiguousSessionError,
    NoSuchSessionError,
    RequestRefusedError,
    SessionEndedError,
)
from happy_launcher.runner.attach import Detached, Taken, after_attached, choose, hands_back
from happy_launcher.session.launcher import LauncherExit

pytestmark = pytest.mark.anyio

DETACHED = SessionView(
    happy_id="hs-phone",
    claude_id="c1a0de00-0000-4000-8000-000000000001",
    state="running",
    mode="remote",
    cwd="/work/project",
    pid=4242,
    started_at=2,
    last_activity=None,
    socket=Path("/run/4242.sock"),
    first_prompt="fix the tests",
    terminal=False,
)
AT_DESK = DETACHED._replace(
    happy_id="hs-desk", claude_id="c1a0de00-0000-4000-8000-000000000002", pid=7,
    mode="local", terminal=True, first_prompt="write docs",
)  # fmt: skip
ENDED = DETACHED._replace(
    happy_id="hs-old", claude_id="c1a0de00-0000-4000-8000-000000000003",
    state="completed", pid=None, socket=None, terminal=None, first_prompt="old work",
)  # fmt: skip


def title(view: SessionView) -> str | None:
    return view.first_prompt


def test_the_one_session_without_a_terminal_is_the_default() -> None:
    assert choose([AT_DESK, DETACHED, ENDED], None, title) is DETACHED


def test_no_session_without_a_terminal_is_said() -> None:
    with pytest.raises(NoSuchSessionError, match="no session runs without a terminal"):
        choose([AT_DESK, ENDED], None, title)


def test_several_sessions_without_a_terminal_must_be_named() -> None:
    other = DETACHED._replace(happy_id="hs-phone-2", pid=4243)
    with pytest.raises(
        AmbiguousSessionError, match=r"2 sessions run without a terminal \(hs-phone, hs-phone-2\)"
    ):
        choose([DETACHED, other], None, title)


@pytest.mark.parametrize("selector", ["hs-ph", "c1a0de00-0000-4000-8000-000000000001", "fix the tests"])
def test_a_session_is_named_by_an_id_prefix_or_its_title(selector: str) -> None:
    assert choose([AT_DESK, DETACHED, ENDED], selector, title) is DETACHED


def test_a_session_in_a_terminal_is_refused() -> None:
    with pytest.raises(RequestRefusedError, match=r"hs-desk runs in a terminal already \(pid 7\)"):
        choose([AT_DESK, DETACHED], "write docs", title)


def test_remote_mode_in_a_terminal_is_refused_too() -> None:
    screen = DETACHED._replace(terminal=True)
    with pytest.raises(RequestRefusedError, match="runs in a terminal already"):
        choose([screen], "hs-phone", title)


def test_a_headless_run_is_not_taken_for_a_detached_one() -> None:
    headless = DETACHED._replace(happy_id="hs-pipe", mode="headless")
    assert choose([headless, DETACHED], None, title) is DETACHED
    with pytest.raises(RequestRefusedError, match="hs-pipe runs Claude on happy's own stdio"):
        choose([headless, DETACHED], "hs-pipe", title)


def test_a_session_that_does_not_answer_is_refused() -> None:
    silent = DETACHED._replace(mode=None, terminal=None)
    with pytest.raises(RequestRefusedError, match=r"hs-phone does not answer \(pid 4242\)"):
        choose([silent], "hs-phone", title)


def test_an_ended_session_is_refused_with_how_to_continue_it() -> None:
    with pytest.raises(SessionEndedError, match=r"hs-old has ended .*happy claude --resume c1a0de00-.*0003`"):
        choose([DETACHED, ENDED], "hs-old", title)


def test_an_unknown_name_is_said() -> None:
    with pytest.raises(NoSuchSessionError, match="no session matches 'nothing'"):
        choose([DETACHED], "nothing", title)


@pytest.mark.parametrize(
    ("exit", "ended_by", "back"),
    [
        (LauncherExit("switch"), None, True),  # Ctrl-T, or a message sent to the session
        (LauncherExit("aborted", code=129), signal.SIGHUP, True),  # the terminal closed
        (LauncherExit("switch"), signal.SIGHUP, True),  # closed during the switch
        (LauncherExit("exited"), None, False),  # /exit: the session ends
        (LauncherExit("exited", code=1), None, False),
        (LauncherExit("aborted", code=143), signal.SIGTERM, False),  # happy itself was ended
        (LauncherExit("switch"), signal.SIGTERM, False),
    ],
)
def test_what_hands_the_session_back(exit: LauncherExit, ended_by: int | None, back: bool) -> None:
    assert hands_back(exit, ended_by) is back


class FakeSpawn:
    def __init__(self, *, fails: bool = False) -> None:
        self.fails = fails
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, directory: str, claude_id: str) -> Detached:
        self.calls.append((directory, claude_id))
        if self.fails:
            raise RuntimeError("no such directory")
        return Detached("hs-phone", 5151)


async def test_a_switch_starts_the_detached_run_again_on_the_same_claude_session(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spawn = FakeSpawn()
    code = await after_attached(DETACHED, spawn, DETACHED.claude_id, LauncherExit("switch"), None)
    assert (code, spawn.calls) == (0, [("/work/project", DETACHED.claude_id)])
    assert capsys.readouterr().err == (
        "happy: session hs-phone runs on without a terminal (pid 5151): `happy attach` takes it again\n"
    )


async def test_claude_exiting_ends_the_session_without_a_hand_back() -> None:
    spawn = FakeSpawn()
    assert await after_attached(DETACHED, spawn, DETACHED.claude_id, LauncherExit("exited"), None) is None
    assert spawn.calls == []


async def test_a_failed_hand_back_says_how_to_continue(capsys: pytest.CaptureFixture[str]) -> None:
    code = await after_attached(DETACHED, FakeSpawn(fails=True), None, LauncherExit("switch"), None)
    assert code == 1
    err = capsys.readouterr().err
    assert "handing the session back failed (no such directory)" in err
    assert f"happy claude --resume {DETACHED.claude_id}" in err


def test_the_taken_session_keeps_the_options_it_was_started_with() -> None:
    assert Taken(DETACHED, "opus", "plan").options() == ["--permission-mode", "plan", "--model", "opus"]
    assert Taken(DETACHED).options() == []  # not started by the spawner: Claude's defaults
