"""Job control with the real Claude under `happy claude` in an interactive bash: Ctrl-Z, `jobs`, `fg`
(the pass-through's side is in tests/unit/local/test_job_control.py)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.e2e.conftest import UNSCRIPTED
from tests.e2e.test_local_e2e import (
    KITTY_TERMINAL,
    has_text,
    leftover_modes,
    only_session,
    turn_ends,
)
from tests.support.claude_env import make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, Reply, Script, Text
from tests.support.happy_tui import READY_MARKERS, HappyTui, wait_pid_gone
from tests.unit.local.test_job_control import TIMEOUT, state

pytestmark = pytest.mark.timeout(60)


def test_ctrl_z_in_claude_then_fg(tmp_path: Path) -> None:
    script = Script(fallback=Reply([Text(UNSCRIPTED)]))
    script.on(Reply([Text("Answered after fg.")]), prompt="After fg")
    home = tmp_path / "happy"
    home.mkdir()
    with FakeAnthropic(script) as api:
        cenv = make_claude_env(tmp_path / "claude", api.url)
        tui = HappyTui(cenv, home, shell=True, terminal_replies=KITTY_TERMINAL)
        try:
            tui.wait_ready()
            claude = tui.claude_pid()
            happy = tui.happy_pid()
            modes_on = leftover_modes(bytes(tui.raw))
            tui.child.send("\x1a")  # Ctrl-Z
            code, stty = tui.next_prompt()
            assert code == 128 + signal.SIGTSTP
            assert stty == tui.stty_before, "terminal settings not restored on suspend"
            assert {"?1049", "?2004"} <= modes_on  # the alternate screen, bracketed paste, ...
            # Up to the prompt line: bash's readline switches bracketed paste on for itself.
            assert leftover_modes(bytes(tui.raw[: tui.raw.rindex(b"RC=")])) == set()
            assert tui.on_screen("Claude Code is suspended")
            assert (state(happy), state(claude)) == ("T", "T")
            assert "Stopped" in tui.shell_line("jobs")

            mark = len(tui.seen)
            tui.child.sendline("fg")
            ready = lambda: any(tui.on_screen(m, since=mark) for m in READY_MARKERS)  # noqa: E731
            tui.wait(ready, 20, "the input box after fg")
            tui.submit("After fg")
            tui.wait_events(has_text("Answered after fg."), 30, "the answer after fg")
            assert tui.exit() == 0
            assert tui.stty_after == tui.stty_before
            assert turn_ends(tui.events()) == ["completed"]
            assert only_session(home).status == "completed"
        finally:
            tui.kill()
    assert wait_pid_gone(claude, TIMEOUT)
