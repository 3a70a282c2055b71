"""Inject mode (issue 10 §2): `happy send --inject` types a message into the live TUI, with the
real bundled Claude under happy's PTY against the fake Messages API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from happy_launcher.store.sessions import SessionStore
from tests.e2e.conftest import Launch, echo
from tests.e2e.test_switch_e2e import SLOW, happy, stored, texts
from tests.support.claude_env import ClaudeEnv, make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, Reply, Rule, Script, Text, ToolUse
from tests.support.happy_tui import HappyTui

pytestmark = [pytest.mark.timeout(120), pytest.mark.e2e]

COMMAND = "touch approved.txt && echo hello"


@pytest.fixture
def script() -> Script:
    slow = Rule(Reply([Text(SLOW, chunk_size=6)], chunk_delay=0.3), prompt="use slow")
    call = ToolUse("Bash", {"command": COMMAND, "description": "Create approved.txt"})
    tool = Rule(Reply([Text("I'll run it."), call]), prompt="Create the file")
    done = Rule(Reply([Text("The command ran.")]), tool_result="Bash")
    return Script([slow, tool, done], fallback=echo)


def start(launch: Launch, fake: FakeAnthropic, tmp_path: Path, *args: str, **env_args: Any) -> HappyTui:
    cenv: ClaudeEnv = make_claude_env(tmp_path / "claude", fake.url, **env_args)
    t = launch(cenv, args, env={"TERM": "xterm"})
    t.wait_ready()
    return t


def inject(t: HappyTui, text: str, *more: str) -> None:
    sent = happy(t, "send", "--inject", *more, text)
    assert sent.returncode == 0, sent.stderr


def user_texts(tmp_path: Path) -> list[str]:
    return texts(stored(tmp_path / "home")[1], "user")


def no_pending(tmp_path: Path) -> None:
    session, _ = stored(tmp_path / "home")
    with SessionStore.open(tmp_path / "home") as store:
        assert store.pending_inbound(session.id) == []


def test_idle_then_a_repeat_is_not_typed_again(fake: FakeAnthropic, tmp_path: Path, launch: Launch) -> None:
    t = start(launch, fake, tmp_path)
    inject(t, "hello injected", "--id", "m-1")
    t.wait_turn_end(1)
    inject(t, "hello injected", "--id", "m-1")  # the same message again: accepted, not typed
    t.submit("hello typed")
    t.wait_turn_end(2)
    assert t.exit() == 0
    assert user_texts(tmp_path) == ["hello injected", "hello typed"]
    assert [r.last_user_text for r in fake.requests] == ["hello injected", "hello typed"]
    no_pending(tmp_path)


def test_mid_turn_it_is_queued_then_answered_after_the_turn(
    fake: FakeAnthropic, tmp_path: Path, launch: Launch
) -> None:
    t = start(launch, fake, tmp_path)
    t.submit("use slow please")
    t.expect_screen("word2")  # streaming
    inject(t, "hello queued")
    t.wait_turn_end(2)
    assert t.exit() == 0
    assert user_texts(tmp_path) == ["use slow please", "hello queued"]
    assert [r.last_user_text for r in fake.requests] == ["use slow please", "hello queued"]
    no_pending(tmp_path)


def test_a_draft_is_neither_sent_nor_lost(fake: FakeAnthropic, tmp_path: Path, launch: Launch) -> None:
    t = start(launch, fake, tmp_path)
    t.type("abc")
    inject(t, "hello beside a draft")
    t.wait_turn_end(1)
    t.child.send("\r")  # the draft is back in the box: Enter sends it
    t.wait_turn_end(2)
    assert t.exit() == 0
    assert user_texts(tmp_path) == ["hello beside a draft", "abc"]


def test_an_open_permission_dialog_is_never_answered(
    fake: FakeAnthropic, tmp_path: Path, launch: Launch
) -> None:
    t = start(launch, fake, tmp_path, permission_mode="default", allow=())
    t.submit("Create the file")
    t.expect_screen("Do you want to proceed")
    mark = len(t.seen)
    inject(t, "hello after the dialog")
    t.expect_screen("Do you want to proceed", since=mark)  # redrawn for the injector: it waits
    # The dialog ignores keys for ~1 s after it shows: Esc (No) until the turn is interrupted.
    for _ in range(10):
        t.child.send("\x1b")
        if t.poll(lambda: t.on_screen("Interrupted", since=mark), 1.0):
            break
    else:
        raise AssertionError("the permission dialog never took Esc")
    t.wait_events(lambda evs: "hello after the dialog" in texts(evs, "user"), 30, "the injected prompt")
    t.wait_turn_end(2)
    assert t.exit() == 0
    assert not (t.cenv.cwd / "approved.txt").exists()
    assert user_texts(tmp_path) == ["Create the file", "hello after the dialog"]
    no_pending(tmp_path)


def test_multi_line_and_5kb_messages_are_exact(fake: FakeAnthropic, tmp_path: Path, launch: Launch) -> None:
    t = start(launch, fake, tmp_path)
    lines = "line one\nline two\n\nline four"
    big = " ".join(f"w{n:04d}" for n in range(850))  # 5 KB on one line
    inject(t, lines)
    t.wait_turn_end(1)
    inject(t, big)
    t.wait_turn_end(2)
    assert t.exit() == 0
    assert user_texts(tmp_path) == [lines, big]
    assert [r.last_user_text for r in fake.requests] == [lines, big]
