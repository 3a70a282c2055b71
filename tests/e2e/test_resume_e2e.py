"""`happy claude --resume` with the real bundled Claude TUI against the fake Messages API: one happy
session per Claude conversation, whatever Claude writes first on a resume (issue 16 §1), and the
resume hint Claude prints at exit keeps working after happy is gone (issue 16 §6)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from happy_launcher.store.sessions import SessionStore
from tests.e2e.conftest import UNSCRIPTED_REPLY
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import FakeAnthropic, Reply, Script, Text, ToolUse
from tests.support.happy_tui import Envelope, HappyTui, checked_envelope, squeeze

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


@pytest.fixture
def script() -> Script:
    step = ToolUse("Bash", {"command": "echo step1", "description": "Print step1"})
    script = Script(fallback=UNSCRIPTED_REPLY)
    script.on(Reply([Text("Running it."), step]), prompt="Use Bash")
    script.on(Reply([Text("It printed step1.")]), tool_result="Bash")
    script.on(Reply([Text("Second answer.")]), prompt="Second question")
    return script


@pytest.fixture
def launched(cenv: ClaudeEnv, home: Path) -> Iterator[list[HappyTui]]:
    started: list[HappyTui] = []
    yield started
    for tui in started:
        tui.kill()


def run_turn(tuis: list[HappyTui], cenv: ClaudeEnv, home: Path, prompt: str, *args: str) -> HappyTui:
    """One `happy claude [args]` run of one turn, ended with /exit."""
    tui = HappyTui(cenv, home, args, events=home / f"events-{len(tuis)}.jsonl")
    tuis.append(tui)
    tui.wait_ready()
    tui.submit(prompt)
    tui.wait_turn_end()
    assert tui.exit() == 0
    return tui


def happy_sessions(home: Path) -> list[tuple[str, str]]:
    """(happy session id, Claude session id) of every happy session."""
    with SessionStore.open(home) as store:
        return [(s.id, s.claude_session_id or "") for s in store.list_sessions()]


def stored(home: Path, session: str) -> list[tuple[int, Envelope]]:
    with SessionStore.open(home) as store:
        return [(seq, checked_envelope(body)) for seq, body in store.raw_envelopes(session)]


def claude_session_rows(home: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(home / "sessions.db")
    try:
        query = "SELECT happy_session, claude_session_id, source FROM claude_sessions ORDER BY rowid"
        return [tuple(row) for row in conn.execute(query).fetchall()]
    finally:
        conn.close()


@pytest.mark.parametrize("how", ["id", "continue", "title"])
def test_resuming_a_session_whose_last_turn_used_a_tool_continues_its_happy_session(
    cenv: ClaudeEnv, home: Path, launched: list[HappyTui], how: str
) -> None:
    first = run_turn(launched, cenv, home, "Use Bash")
    [(happy_id, claude_id)] = happy_sessions(home)
    assert "tool-call-end" in [e["ev"]["t"] for e in first.events()]
    if how == "title":  # as `/rename My work` writes it
        title = {"type": "custom-title", "customTitle": "My work", "sessionId": claude_id}
        with cenv.transcript_path(claude_id).open("a") as f:
            f.write(json.dumps(title) + "\n")
    args = {"id": ("--resume", claude_id), "continue": ("--continue",), "title": ("--resume", "my work")}[how]

    second = run_turn(launched, cenv, home, "Second question", *args)
    assert happy_sessions(home) == [(happy_id, claude_id)], "the resume started another happy session"
    rows = stored(home, happy_id)
    assert [seq for seq, _ in rows] == list(range(1, len(rows) + 1)), "seqs not contiguous"
    assert [e for _, e in rows] == first.events() + second.events()
    ids = [e["id"] for _, e in rows]
    assert len(ids) == len(set(ids)), "an envelope was stored twice"
    claude_uuids = [e["claudeUuid"] for _, e in rows if e.get("claudeUuid")]
    assert len(claude_uuids) == len(set(claude_uuids)), "a record was mirrored twice"
    texts = [e["ev"]["text"] for _, e in rows if e["ev"]["t"] == "text"]
    assert texts == ["Use Bash", "Running it.", "It printed step1.", "Second question", "Second answer."]
    assert claude_session_rows(home) == [(happy_id, claude_id, "startup"), (happy_id, claude_id, "resume")]


@pytest.mark.parametrize("how", ["continue", "title"])
def test_a_session_claude_picks_is_named_before_the_spawn_even_when_no_hook_runs(
    cenv: ClaudeEnv, home: Path, launched: list[HappyTui], how: str
) -> None:
    """`--continue` and `--resume <title>` resolve to the session Claude would pick before it
    starts: the run is bound to it, and mirrors it, even when the user's `disableAllHooks`
    keeps the SessionStart hook from ever telling."""
    first = run_turn(launched, cenv, home, "Use Bash")
    [(happy_id, claude_id)] = happy_sessions(home)
    title = {"type": "custom-title", "customTitle": "My work", "sessionId": claude_id}
    with cenv.transcript_path(claude_id).open("a") as f:
        f.write(json.dumps(title) + "\n")
    settings = json.loads(cenv.settings_path.read_text())
    cenv.settings_path.write_text(json.dumps({**settings, "disableAllHooks": True}))
    args = {"continue": ("--continue",), "title": ("--resume", "my work")}[how]

    second = run_turn(launched, cenv, home, "Second question", *args)
    assert happy_sessions(home) == [(happy_id, claude_id)]
    assert [e for _, e in stored(home, happy_id)] == first.events() + second.events()
    texts = [e["ev"]["text"] for e in second.events() if e["ev"]["t"] == "text"]
    assert texts == ["Second question", "Second answer."]


HINT = re.compile(r"Resumethissessionwith:(claude--settings(\S+?\.json)--resume([0-9a-f-]{36}))")


def test_claudes_resume_hint_works_after_happy_is_gone_and_happy_prints_its_own(
    cenv: ClaudeEnv, home: Path, launched: list[HappyTui], fake: FakeAnthropic
) -> None:
    # Wide enough that Claude's hint names the --settings it was given (it leaves out what does not fit).
    tui = HappyTui(cenv, home, dimensions=(40, 400))
    launched.append(tui)
    tui.wait_ready()
    tui.submit("Use Bash")
    tui.wait_turn_end()
    assert tui.exit() == 0
    [(happy_id, claude_id)] = happy_sessions(home)
    hint = HINT.search(squeeze(tui.seen))
    assert hint is not None, squeeze(tui.seen)[-400:]
    settings, resumed = Path(hint.group(2)), hint.group(3)
    assert resumed == claude_id and settings.is_relative_to(home)
    # Claude's own hint, run as printed with nothing of happy running: it resumes the conversation.
    done = subprocess.run(
        [str(cenv.binary), "--settings", str(settings), "--resume", resumed, "-p", "Second question"],
        cwd=cenv.cwd,
        env=cenv.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "Second answer.", "")
    assert fake.requests[-1].last_user_text == "Second question"
    assert happy_sessions(home) == [(happy_id, claude_id)] and list((home / "run").iterdir()) == []
    # ... and after it, happy's own.
    assert squeeze(f"Resume with: happy claude --resume {claude_id}") in squeeze(tui.seen[hint.end() :])
