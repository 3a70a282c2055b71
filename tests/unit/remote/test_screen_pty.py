"""The remote-mode screen (remote/screen.py) on a real PTY: a driver runs `RemoteScreen` with a
fake session (tests/support/screen_driver.py) under `sh -c 'stty -g; driver; stty -g'`; the test
feeds it envelopes and keys and checks the screen, the calls the session got, and that the
terminal is left exactly as it was (termios by `stty -g`, and no mode left on in the output)."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from happy_launcher.protocol import (
    Envelope,
    EnvelopeFactory,
    Event,
    SequentialIds,
    StartEv,
    StopEv,
    TextEv,
    ToolCallEndEv,
    ToolCallStartEv,
    TurnEndEv,
    TurnStartEv,
    wall_clock_ms,
)
from happy_launcher.remote.screen import RemoteScreen, ScreenEnd
from happy_launcher.terminal.guard import ModeTracker
from tests.support.happy_tui import wait_pid_gone
from tests.support.screen_driver import STATUS
from tests.support.screen_term import DRIVER, REPO, TIMEOUT, ScreenTerm

pytestmark = pytest.mark.timeout(60)

TURN = "tone"
SUB = "sagentone"
make = EnvelopeFactory(SequentialIds("e"))


def agent(ev: Event, *, subagent: str | None = None) -> Envelope:
    return make.agent(ev, turn=TURN, time=wall_clock_ms(), subagent=subagent)


@pytest.fixture
def term(tmp_path: Path) -> Iterator[ScreenTerm]:
    screen = ScreenTerm(tmp_path)
    yield screen
    screen.close()


def no_mode_left_on(term: ScreenTerm) -> bool:
    tracker = ModeTracker()
    tracker.feed(bytes(term.raw))
    return tracker.reset_sequence() == b""


def permission(id_: str, tool: str, title: str) -> dict[str, object]:
    return {"id": id_, "tool": tool, "title": title, "input": {"path": title}}


def test_a_turn_on_screen_and_what_the_keys_ask_of_the_session(term: ScreenTerm) -> None:
    term.ready()
    term.envelopes(
        make.user_text("Find the TODOs", wall_clock_ms()),
        agent(TurnStartEv()),
        agent(TextEv(text="Searching the **tree**.")),
        agent(ToolCallStartEv(call="c1", name="Bash", title="rg -n TODO src", description="", args={})),
    )
    term.expect_screen("❯ Find the TODOs")
    term.expect_screen("● Searching the tree.")
    term.expect_screen("○ Bash rg -n TODO src")
    term.expect_screen("Working…")

    term.put(partial="Three of th")
    term.put(partial="em are old")
    term.expect_screen("Three of them are old")

    term.envelopes(
        agent(StartEv(title="Auth explorer"), subagent=SUB),
        agent(TextEv(text="Look at auth"), subagent=SUB),
    )
    term.expect_screen("◇ Auth explorer")

    # Three prompts at once: answered in order, one key each.
    for id_, title in (("p1", "a.txt"), ("p2", "b.txt"), ("p3", "c.txt")):
        term.put(permission={**permission(id_, "Write", title)})
    term.expect_screen("Allow Write: a.txt?")
    term.expect_screen("2 more waiting")
    term.proc.send("yna")
    assert term.wait_calls(3) == [
        {"call": "answer", "id": "p1", "allow": True, "stop": False},
        {"call": "answer", "id": "p2", "allow": False, "stop": False},
        {"call": "answer", "id": "p3", "allow": False, "stop": True},
    ]
    term.expect_screen("✓ Allowed Write: a.txt")
    term.expect_screen("✗ Denied and stopped Write: c.txt")

    mark = term.mark()
    term.proc.send("next: fix the typo")
    term.expect_screen("❯ next: fix the typo", since=mark)
    term.proc.send("\x7f\x7f\x7f\x7fbug\r")  # backspaces, then Enter
    assert term.wait_calls(4)[3] == {"call": "send", "text": "next: fix the bug"}

    term.proc.send("fail\r")  # the session cannot take it: the screen says so and stays
    term.expect_screen("! Could not send: the session is gone")

    term.proc.send("\x03")  # a turn runs: Ctrl-C interrupts it
    assert term.wait_calls(6)[5] == {"call": "interrupt"}
    term.expect_screen("Interrupting…")

    term.envelopes(
        agent(ToolCallEndEv(call="c1")),
        agent(TextEv(text="Three of them are old.")),
        agent(StopEv(), subagent=SUB),
        agent(TurnEndEv(status="cancelled")),
    )
    term.expect_screen("✓ Bash rg -n TODO src")
    term.expect_screen("◆ Auth explorer")
    term.expect_screen("Turn cancelled")

    term.proc.send("\x03")  # idle now: the first Ctrl-C only warns
    term.expect_screen("Press Ctrl-C again to exit")
    term.proc.send("\x03")
    code, end = term.finish()
    assert (code, end) == (0, {"end": "exit", "signal": None})
    assert len(term.calls()) == 6
    assert no_mode_left_on(term)


def test_one_ctrl_c_when_idle_does_not_exit(term: ScreenTerm) -> None:
    term.ready()
    term.proc.send("\x03")
    term.expect_screen("Press Ctrl-C again to exit")
    term.put(permission=permission("p1", "Edit", "x.py"))
    term.expect_screen("Allow Edit: x.py?")
    term.put(permission_done="p1")  # answered elsewhere: the prompt goes, unanswered here
    term.put(status={"happy_session": "hsession0001", "claude_session": "c-2", "model": "opus-x"})
    term.expect_screen("claude c-2 · opus-x")
    term.put(close=True)
    code, end = term.finish()
    assert (code, end) == (0, {"end": "closed", "signal": None})
    assert term.calls() == []
    assert no_mode_left_on(term)


def test_ctrl_t_asks_for_local_mode(term: ScreenTerm) -> None:
    term.ready()
    term.proc.send("\x14")
    assert term.finish() == (0, {"end": "switch", "signal": None})
    assert no_mode_left_on(term)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_ends_the_screen_and_restores_the_terminal(term: ScreenTerm, sig: signal.Signals) -> None:
    term.ready()
    term.envelopes(agent(TurnStartEv()))
    term.expect_screen("Working…")
    os.kill(term.pid(), sig)
    code, end = term.finish()
    assert (code, end) == (128 + sig, {"end": "signal", "signal": int(sig)})
    assert no_mode_left_on(term)


def test_an_exception_beside_the_screen_restores_the_terminal(term: ScreenTerm) -> None:
    term.ready()
    term.put(permission=permission("p1", "Bash", "ls"))
    term.expect_screen("Allow Bash: ls?")
    term.put(**{"raise": "boom in the session"})
    code, end = term.finish()
    assert (code, end) == (1, {})
    assert re.search(r"RuntimeError: boom in the session", term.seen)
    assert no_mode_left_on(term)


def test_the_terminal_hanging_up_ends_the_screen(tmp_path: Path) -> None:
    feed = tmp_path / "feed"
    os.mkfifo(feed)
    feed_fd = os.open(feed, os.O_RDWR)
    log = tmp_path / "actions.jsonl"
    pid, master = pty.fork()
    if pid == 0:  # pragma: no cover - the forked copy of pytest must never return
        try:
            os.chdir(REPO)
            os.execv(sys.executable, [*DRIVER, str(feed), str(log)])
        finally:
            os._exit(127)
    try:
        seen = b""
        while b"remote" not in seen:
            assert select.select([master], [], [], TIMEOUT)[0], f"no screen in {seen!r}"
            seen += os.read(master, 4096)
    finally:
        os.close(master)  # the terminal window closes
        os.close(feed_fd)
    assert wait_pid_gone(pid, TIMEOUT), "the screen outlived its terminal"
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) in (0, 128 + signal.SIGHUP)  # ended, not killed
    assert b'"end"' in log.read_bytes()


class NoActions:
    async def send(self, text: str) -> None:
        raise AssertionError("not expected")

    async def interrupt(self) -> None:
        raise AssertionError("not expected")

    async def answer_permission(self, request_id: str, allow: bool, *, stop: bool = False) -> None:
        raise AssertionError("not expected")


def test_without_a_terminal_the_screen_refuses_to_start_and_close_before_run_ends_it() -> None:
    read_fd, write_fd = os.pipe()
    try:
        screen = RemoteScreen(NoActions(), status=STATUS, stdin_fd=read_fd, stdout_fd=write_fd)
        with pytest.raises(ValueError, match="needs a terminal"):
            anyio.run(screen.run)
        screen.close()
        assert anyio.run(screen.run) == ScreenEnd("closed")
    finally:
        os.close(read_fd)
        os.close(write_fd)
