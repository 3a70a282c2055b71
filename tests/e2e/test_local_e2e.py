"""`happy claude` end to end: the real bundled Claude TUI under happy's PTY, against the fake Messages API.

Each test drives the real console script (`.venv/bin/happy claude --happy-events …`) under a pexpect PTY
(tests/support/happy_tui.py) with a hermetic HOME (tests/support/claude_env.py) and a scripted fake API on
127.0.0.1 (tests/support/fake_anthropic.py), then checks the envelopes in the events file, the SQLite store
under HAPPY_HOME_DIR and the transcripts on disk. Every wait is bounded and event-driven (screen output,
envelopes, requests the fake received, the store); nothing sleeps to synchronise.

Terminal restoration is checked from the outside: with `wrap_stty=True` happy runs inside a shell that prints
`stty -g` of the very same terminal before and after the run, and the raw bytes the terminal received are
checked for terminal modes left switched on (`leftover_modes`, independent of happy's own tracker).
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from cuid2 import is_cuid

from happy_launcher.store.sessions import SessionInfo, SessionStore
from tests.e2e.conftest import UNSCRIPTED, UNSCRIPTED_REPLY, Launch
from tests.support.claude_env import ClaudeEnv, make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, Rule, Script, Text, ToolUse
from tests.support.happy_tui import (
    Envelope,
    HappyTui,
    checked_envelope,
    getpid_alive,
    happy_executable,
    kinds,
    wait_pid_gone,
)

pytestmark = pytest.mark.timeout(60)

Record = dict[str, Any]


# --------------------------------------------------------------------------------------------------
# Fixtures (the rest in conftest.py)


@pytest.fixture
def script() -> Script:
    """The fake API's rule table; tests add rules before they prompt."""
    return Script(fallback=UNSCRIPTED_REPLY)


def claude_env(tmp_path: Path, fake: FakeAnthropic, **kw: Any) -> ClaudeEnv:
    return make_claude_env(tmp_path / "claude", fake.url, **kw)


# --------------------------------------------------------------------------------------------------
# Helpers: the store, transcripts, envelopes


def store_sessions(home: Path) -> list[SessionInfo]:
    with SessionStore.open(home) as store:
        return store.list_sessions()


def store_envelopes(home: Path, session: str) -> list[Envelope]:
    with SessionStore.open(home) as store:
        return [checked_envelope(body) for _, body in store.raw_envelopes(session)]


def store_keys(home: Path, session: str) -> set[str]:
    with SessionStore.open(home) as store:
        return store.processed_keys(session)


def claude_sessions(home: Path, session: str | None = None) -> list[tuple[str, str]]:
    """(claude session id, SessionStart source) rows, in the order they were recorded."""
    conn = sqlite3.connect(home / "sessions.db")
    try:
        query = "SELECT happy_session, claude_session_id, source FROM claude_sessions ORDER BY rowid"
        rows = conn.execute(query).fetchall()
    finally:
        conn.close()
    return [(cid, source) for happy, cid, source in rows if session is None or happy == session]


def only_session(home: Path) -> SessionInfo:
    sessions = store_sessions(home)
    assert len(sessions) == 1, sessions
    return sessions[0]


def read_records(path: Path) -> list[Record]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def record_uuids(path: Path) -> list[str]:
    return [r["uuid"] for r in read_records(path) if isinstance(r.get("uuid"), str)]


def transcript_uuids(cenv: ClaudeEnv, session_id: str) -> set[str]:
    """The uuids of a session's records: its main transcript and its subagent transcripts."""
    uuids = set(record_uuids(cenv.transcript_path(session_id)))
    sub = cenv.subagents_dir(session_id)
    if sub.is_dir():
        for path in sub.glob("agent-*.jsonl"):
            uuids.update(record_uuids(path))
    return uuids


def claude_uuids(envelopes: list[Envelope]) -> list[str]:
    return [e["claudeUuid"] for e in envelopes if "claudeUuid" in e]


def texts(envelopes: list[Envelope], role: str = "agent") -> list[str]:
    return [e["ev"]["text"] for e in envelopes if e["role"] == role and e["ev"]["t"] == "text"]


def main_chain(envelopes: list[Envelope]) -> list[Envelope]:
    return [e for e in envelopes if "subagent" not in e]


def has_text(text: str) -> Callable[[list[Envelope]], bool]:
    return lambda evs: text in texts(evs)


def turn_ends(envelopes: list[Envelope]) -> list[str]:
    return [e["ev"]["status"] for e in envelopes if e["ev"]["t"] == "turn-end"]


def has_compact_summary(cenv: ClaudeEnv, session: SessionInfo) -> bool:
    sid = session.claude_session_id
    assert sid is not None
    data = cenv.transcript_path(sid).read_bytes()
    return b'"isCompactSummary":true' in data[: data.rfind(b"\n")]  # complete lines only: Claude is writing


def check_turns_balanced(envelopes: list[Envelope]) -> None:
    """Turns never nest, every turn-start is ended, and every agent envelope of the main chain is inside
    the turn it names."""
    current: str | None = None
    for e in envelopes:
        t = e["ev"]["t"]
        if t == "turn-start":
            assert current is None, f"turn-start inside turn {current}"
            current = e["turn"]
        elif t == "turn-end":
            assert current == e["turn"], (current, e)
            current = None
        elif e["role"] == "agent":
            assert current is not None and e.get("turn") == current, e
    assert current is None, "a turn was left open"


def has_tool_result(tool: str, needle: str = "") -> Callable[[list[RecordedRequest]], bool]:
    """The fake received a request carrying a `tool` result (containing `needle`)."""
    return lambda reqs: any(
        r.tool_name == tool and needle in r.content for req in reqs for r in req.tool_results
    )


# Terminal modes that must not outlive Claude: DEC private modes (`CSI ? N h`; 25 = cursor visible is the
# inverse; 2031 = theme-change notifications), kitty keyboard flags (`CSI > N u` push / `CSI < N u` pop) and
# xterm's modifyOtherKeys (`CSI > 4 ; N m`, reset by `CSI > 4 m`).
_DEC_MODES = (1, 47, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 1016, 1047, 1049, 2004, 2031)
_MODE_SEQ = re.compile(rb"\x1b\[([?<>=])([0-9;:]*)([hlum])")
# A terminal that speaks the kitty keyboard protocol: it answers Claude's flags query (`CSI ? u`) and
# the primary device attributes query Claude sends after it (`CSI c`, the "end of replies" marker).
# Claude then pushes kitty flags and turns on modifyOtherKeys, as in kitty, WezTerm, foot or Ghostty.
KITTY_TERMINAL = {b"\x1b[?u": b"\x1b[?0u", b"\x1b[c": b"\x1b[?62;22c"}
# Modes Claude turns on that are easy to miss (each has its own test below).
THEME_NOTIFICATIONS = "?2031"
MODIFY_OTHER_KEYS = ">4"


def leftover_modes(data: bytes) -> set[str]:
    """The terminal modes the byte stream `data` leaves switched on: `?N` (set with `CSI ? N h`, not reset
    with `CSI ? N l`), `?25l` (cursor hidden), `kitty` (keyboard flags pushed and not popped) and `>4`
    (modifyOtherKeys)."""
    on: dict[int, bool] = {}
    kitty = 0
    modify_other_keys = False
    for prefix, params, final in _MODE_SEQ.findall(data):
        numbers = [int(p) for p in params.replace(b":", b";").split(b";") if p]
        if prefix == b"?" and final in b"hl":
            for n in numbers:
                on[n] = final == b"h"
        elif prefix == b">" and final == b"u":
            kitty += 1
        elif prefix == b"<" and final == b"u":
            kitty = max(0, kitty - (numbers[0] if numbers else 1))
        elif prefix == b">" and final == b"m" and numbers[:1] == [4]:
            modify_other_keys = len(numbers) > 1 and numbers[1] != 0
    left = {f"?{n}" for n in _DEC_MODES if on.get(n)}
    if on.get(25) is False:
        left.add("?25l")
    if kitty:
        left.add("kitty")
    if modify_other_keys:
        left.add(MODIFY_OTHER_KEYS)
    return left


# --------------------------------------------------------------------------------------------------
# Scripts


SUB_PROMPT = "SUBAGENT-TASK: run `echo from-subagent` with Bash and report what it printed."
AGENT_CALL = ToolUse(
    "Agent", {"description": "Echo from a subagent", "prompt": SUB_PROMPT, "subagent_type": "general-purpose"}
)
# Slow enough that the test can act mid-turn, long enough to never finish first (~20 s).
SLOW_TEXT = " ".join(f"Counting{i}" for i in range(1, 200))


def add_agent_rules(script: Script, sub_delay: float) -> None:
    """The subagent's two steps (as scripts/gen_fixtures.py): one Bash call, then its answer."""
    bash = ToolUse("Bash", {"command": "echo from-subagent", "description": "Echo from the subagent"})
    script.add(Rule(name="subagent: Bash", prompt="SUBAGENT-TASK", reply=Reply([bash], delay=sub_delay)))
    script.add(
        Rule(
            name="subagent: answer",
            first_prompt="SUBAGENT-TASK",
            tool_result="Bash",
            reply=Reply([Text("The command printed: from-subagent")], delay=sub_delay),
        )
    )


def add_slow_turn(script: Script) -> None:
    """A turn that is open on disk (text + a Bash call and its result in the transcript) while the
    follow-up reply streams for ~20 s: Claude writes an assistant record only once its message is
    complete, so a turn with nothing but a streaming reply has no agent envelope yet."""
    step = ToolUse("Bash", {"command": "echo step1", "description": "Print step1"})
    script.on(Reply([Text("Starting now."), step]), prompt="Count slowly")
    script.on(Reply([Text(SLOW_TEXT, chunk_size=10)], chunk_delay=0.1), tool_result="Bash")


def start_slow_turn(tui: HappyTui) -> None:
    """Submit the slow turn and wait until it is mid-stream with its first envelopes mirrored."""
    tui.wait_ready()
    tui.submit("Count slowly")
    tui.wait_events(
        lambda evs: "tool-call-end" in [e["ev"]["t"] for e in evs], 20, "the step's tool-call-end"
    )
    tui.expect_screen("Counting3")


# --------------------------------------------------------------------------------------------------
# 1. prompt -> reply -> /exit


@pytest.mark.e2e
def test_prompt_reply_exit(
    tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    script.on(Reply([Text("Hello from the fake.")]), prompt="Say hello")
    cenv = claude_env(tmp_path, fake)
    tui = launch(cenv)
    tui.wait_ready()
    tui.submit("Say hello")
    tui.wait_turn_end()
    assert tui.exit() == 0

    events = tui.events()
    assert kinds(events) == [
        ("user", "text"),
        ("agent", "turn-start"),
        ("agent", "text"),
        ("agent", "turn-end"),
    ]
    assert texts(events, "user") == ["Say hello"]
    assert texts(events) == ["Hello from the fake."]
    assert turn_ends(events) == ["completed"]
    check_turns_balanced(events)

    session = only_session(home)
    assert session.status == "completed"
    assert session.ended_at is not None
    assert session.cwd == str(cenv.cwd)
    sid = session.claude_session_id
    assert sid is not None
    assert claude_sessions(home, session.id) == [(sid, "startup")]
    # The store holds exactly what the events file got, in the same order.
    assert store_envelopes(home, session.id) == events
    # Every record with a uuid was processed, and nothing else; the envelopes point at those records.
    transcript = cenv.transcript_path(sid)
    assert [p.name for p in cenv.project_dir.glob("*.jsonl")] == [transcript.name]
    uuids = record_uuids(transcript)
    assert len(uuids) == len(set(uuids))
    assert store_keys(home, session.id) == set(uuids)
    assert set(claude_uuids(events)) <= set(uuids)
    by_uuid = {r["uuid"]: r for r in read_records(transcript) if "uuid" in r}
    assert [by_uuid[u]["type"] for u in claude_uuids(events)] == ["user", "assistant"]


# --------------------------------------------------------------------------------------------------
# 2. A Bash call approved in the permission dialog, through the PTY


COMMAND = "touch approved.txt && echo hello"


@pytest.mark.e2e
def test_permission_dialog_answered_through_pty(
    tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    # A command that writes (a read-only `echo` would be allowed without asking).
    call = ToolUse("Bash", {"command": COMMAND, "description": "Create approved.txt"})
    script.on(Reply([Text("I'll run it."), call]), prompt="Create the file")
    script.on(Reply([Text("The command printed: hello")]), tool_result="Bash")
    cenv = claude_env(tmp_path, fake, permission_mode="default", allow=())
    tui = launch(cenv)
    tui.wait_ready()
    mark = len(tui.seen)
    tui.submit("Create the file")
    tui.expect_screen("Do you want to proceed", since=mark)
    tui.expect_screen("1. Yes", since=mark)
    # The dialog ignores keys for ~1 s after it shows (claude-offline.md §2): press Enter until the
    # approved command's result reaches the API (an Enter too many lands in an empty input box: harmless).
    approved = has_tool_result("Bash", "hello")
    for _ in range(10):
        tui.child.send("\r")
        if tui.poll(lambda: approved(fake.requests), 1.0):
            break
    else:
        raise AssertionError("the permission dialog never took the Enter key")
    tui.wait_turn_end()
    assert tui.exit() == 0

    events = tui.events()
    assert kinds(events) == [
        ("user", "text"),
        ("agent", "turn-start"),
        ("agent", "text"),
        ("agent", "tool-call-start"),
        ("agent", "tool-call-end"),
        ("agent", "text"),
        ("agent", "turn-end"),
    ]
    start, end = events[3]["ev"], events[4]["ev"]
    assert start["name"] == "Bash"
    assert start["title"] == "Create approved.txt"
    assert start["args"] == {"command": COMMAND, "description": "Create approved.txt"}
    assert end["call"] == start["call"] == fake.requests[0].tool_use_ids[0]
    assert texts(events) == ["I'll run it.", "The command printed: hello"]
    assert turn_ends(events) == ["completed"]
    check_turns_balanced(events)
    assert only_session(home).status == "completed"
    assert (cenv.cwd / "approved.txt").is_file()


# --------------------------------------------------------------------------------------------------
# 3. Subagents: foreground and background


def check_subagent(events: list[Envelope]) -> None:
    """The subagent's envelopes: one cuid2 id, start (title from the description) first, its prompt, its
    Bash call, its answer, then stop, balanced."""
    sub = [e for e in events if "subagent" in e]
    ids = {e["subagent"] for e in sub}
    assert len(ids) == 1, ids
    sub_id = ids.pop()
    assert is_cuid(sub_id) and not sub_id.startswith("toolu_"), sub_id
    assert [e["ev"]["t"] for e in sub] == [
        "start",
        "text",
        "tool-call-start",
        "tool-call-end",
        "text",
        "stop",
    ]
    assert sub[0]["ev"]["title"] == "Echo from a subagent"
    assert sub[1]["ev"]["text"] == SUB_PROMPT
    call = sub[2]["ev"]
    assert (call["name"], call["title"]) == ("Bash", "Echo from the subagent")
    assert sub[3]["ev"]["call"] == call["call"]
    assert sub[4]["ev"]["text"] == "The command printed: from-subagent"
    # The Agent call itself is not a tool call of the parent.
    assert not [
        e for e in events if e["ev"]["t"] == "tool-call-start" and e["ev"]["name"] in ("Agent", "Task")
    ]
    assert all(e["role"] == "agent" and "turn" in e for e in sub)


def index_of(events: list[Envelope], pred: Callable[[Envelope], bool]) -> int:
    return next(i for i, e in enumerate(events) if pred(e))


@pytest.mark.e2e
def test_foreground_subagent(
    tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    script.on(Reply([Text("Delegating."), AGENT_CALL]), prompt="Delegate")
    add_agent_rules(script, 0.0)
    script.on(Reply([Text("The subagent reported: from-subagent")]), tool_result="Agent")
    cenv = claude_env(tmp_path, fake, background_tasks=False)
    tui = launch(cenv)
    tui.wait_ready()
    tui.submit("Delegate the echo to a subagent")
    tui.wait_turn_end(timeout=30)
    assert tui.exit() == 0

    events = tui.events()
    check_subagent(events)
    assert kinds(main_chain(events)) == [
        ("user", "text"),
        ("agent", "turn-start"),
        ("agent", "text"),
        ("agent", "text"),
        ("agent", "turn-end"),
    ]
    assert texts(main_chain(events)) == ["Delegating.", "The subagent reported: from-subagent"]
    # Foreground: everything of the subagent happens inside the one turn, and it stops before the
    # parent's answer.
    stop = index_of(events, lambda e: e["ev"]["t"] == "stop")
    assert stop < index_of(events, lambda e: e["ev"].get("text") == "The subagent reported: from-subagent")
    assert turn_ends(events) == ["completed"]
    check_turns_balanced(events)
    session = only_session(home)
    assert session.claude_session_id is not None
    assert store_envelopes(home, session.id) == events
    assert set(claude_uuids(events)) <= transcript_uuids(cenv, session.claude_session_id)


@pytest.mark.e2e
def test_background_subagent(
    tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    script.on(Reply([Text("Delegating."), AGENT_CALL]), prompt="Delegate")
    add_agent_rules(script, 0.5)  # slowed down so that the parent's turn ends first, as with a real model
    script.on(Reply([Text("A background agent is on it.")]), tool_result="Agent")
    script.on(Reply([Text("The background agent finished.")]), raw_prompt="<task-notification>")
    cenv = claude_env(tmp_path, fake)  # background tasks: Claude's default
    tui = launch(cenv)
    tui.wait_ready()
    tui.submit("Delegate the echo to a subagent")
    tui.wait_events(
        lambda evs: "The background agent finished." in texts(evs) and len(turn_ends(evs)) >= 2,
        30,
        "the parent's answer to the task notification",
    )
    assert tui.exit() == 0

    events = tui.events()
    check_subagent(events)
    # The notification is no user prompt: one user text only, and it stops the subagent.
    assert texts(events, "user") == ["Delegate the echo to a subagent"]
    assert texts(main_chain(events)) == [
        "Delegating.",
        "A background agent is on it.",
        "The background agent finished.",
    ]
    start = index_of(events, lambda e: e["ev"]["t"] == "start")
    stop = index_of(events, lambda e: e["ev"]["t"] == "stop")
    assert start < index_of(events, lambda e: e["ev"].get("text") == "A background agent is on it.")
    assert stop < index_of(events, lambda e: e["ev"].get("text") == "The background agent finished.")
    # The parent's first turn ended before the subagent did (it outlived the turn).
    assert index_of(events, lambda e: e["ev"]["t"] == "turn-end") < stop
    assert set(turn_ends(events)) == {"completed"}
    check_turns_balanced(events)
    session = only_session(home)
    assert session.status == "completed"
    assert store_envelopes(home, session.id) == events


def first_turn_then(tui: HappyTui, home: Path, command: str) -> tuple[HappyTui, SessionInfo]:
    """Ask "First question", wait for its turn to end, then enter the slash `command`."""
    tui.wait_ready()
    tui.submit("First question")
    tui.wait_turn_end()
    session = only_session(home)
    tui.type(command)
    tui.child.send("\r")
    return tui, session


# --------------------------------------------------------------------------------------------------
# 4. /clear mid-session


@pytest.mark.e2e
def test_clear_follows_the_new_session(
    tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    script.on(Reply([Text("First answer.")]), prompt="First question")
    script.on(Reply([Text("Second answer.")]), prompt="Second question")
    cenv = claude_env(tmp_path, fake)
    tui, session = first_turn_then(launch(cenv), home, "/clear")
    tui.wait(lambda: len(claude_sessions(home, session.id)) == 2, 20, "the SessionStart hook of /clear")
    tui.submit("Second question")
    tui.wait_events(has_text("Second answer."), 20, "the second answer")
    tui.wait_turn_end(2)
    assert tui.exit() == 0

    rows = claude_sessions(home, session.id)
    (first, first_source), (second, second_source) = rows
    assert (first_source, second_source) == ("startup", "clear")
    assert first != second
    events = tui.events()
    assert texts(events, "user") == ["First question", "Second question"]
    assert texts(events) == ["First answer.", "Second answer."]
    assert turn_ends(events) == ["completed", "completed"]
    check_turns_balanced(events)
    # Nothing sent twice; each envelope comes from the transcript of its own session.
    uuids = claude_uuids(events)
    assert len(uuids) == len(set(uuids))
    first_uuids, second_uuids = transcript_uuids(cenv, first), transcript_uuids(cenv, second)
    assert not first_uuids & second_uuids
    cut = index_of(events, lambda e: e["ev"].get("text") == "Second question")
    assert set(claude_uuids(events[:cut])) <= first_uuids
    assert set(claude_uuids(events[cut:])) <= second_uuids
    assert claude_uuids(events[cut:])
    final = only_session(home)
    assert final.claude_session_id == second
    assert final.status == "completed"
    assert store_keys(home, session.id) == first_uuids | second_uuids
    assert store_envelopes(home, session.id) == events


@pytest.mark.e2e
def test_compact_summary_is_not_mirrored_as_a_prompt(
    tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    """After `/compact` Claude writes its summary as a user record (`isCompactSummary`): not user
    input, so no user text and no turn for it (design §2)."""
    script.on(Reply([Text("First answer.")]), prompt="First question")
    summary = Reply([Text("<analysis>Short.</analysis>\n<summary>We talked.</summary>")])
    script.on(summary, prompt="Your task is to create a detailed summary of the conversation so far")
    cenv = claude_env(tmp_path, fake)
    tui, session = first_turn_then(launch(cenv), home, "/compact")
    tui.wait(lambda: has_compact_summary(cenv, session), 30, "the compact summary in the transcript")
    assert tui.exit() == 0
    events = tui.events()
    assert texts(events, "user") == ["First question"]
    assert kinds(events) == [
        ("user", "text"),
        ("agent", "turn-start"),
        ("agent", "text"),
        ("agent", "turn-end"),
    ]


# --------------------------------------------------------------------------------------------------
# 5. --resume of an earlier session


def first_run(cenv: ClaudeEnv, launch: Launch, home: Path) -> tuple[str, list[Envelope]]:
    """A finished one-turn `happy claude` session; (Claude session id, its envelopes)."""
    tui = launch(cenv, events=home / "first.jsonl")
    tui.wait_ready()
    tui.submit("First question")
    tui.wait_turn_end()
    assert tui.exit() == 0
    sid = only_session(home).claude_session_id
    assert sid is not None
    return sid, tui.events()


def without_ids(envelopes: list[Envelope]) -> list[tuple[str, str, str | None, str | None, str | None]]:
    """Envelopes minus what a re-send makes anew (envelope ids, turn ids, times)."""
    return [
        (e["role"], e["ev"]["t"], e["ev"].get("text"), e["ev"].get("status"), e.get("claudeUuid"))
        for e in envelopes
    ]


@pytest.mark.e2e
def test_resume_sends_only_new_records(
    tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    script.on(Reply([Text("First answer.")]), prompt="First question")
    script.on(Reply([Text("Second answer.")]), prompt="Second question")
    cenv = claude_env(tmp_path, fake)
    sid, first_events = first_run(cenv, launch, home)
    old = set(record_uuids(cenv.transcript_path(sid)))
    assert set(claude_uuids(first_events)) <= old

    tui = launch(cenv, ("--resume", sid), events=home / "resumed.jsonl")
    tui.wait_ready()
    tui.submit("Second question")
    tui.wait_turn_end()
    assert tui.exit() == 0

    events = tui.events()
    assert not set(claude_uuids(events)) & old, "records of the earlier run were sent again"
    assert kinds(events) == [
        ("user", "text"),
        ("agent", "turn-start"),
        ("agent", "text"),
        ("agent", "turn-end"),
    ]
    assert texts(events, "user") == ["Second question"]
    assert texts(events) == ["Second answer."]
    assert turn_ends(events) == ["completed"]
    new = set(record_uuids(cenv.transcript_path(sid))) - old  # --resume appends to the same file
    assert set(claude_uuids(events)) <= new
    # The resumed run continued the happy session of the first: same id, its seqs went on.
    [resumed] = store_sessions(home)
    assert claude_sessions(home, resumed.id) == [(sid, "startup"), (sid, "resume")]
    assert resumed.status == "completed"
    assert store_envelopes(home, resumed.id) == first_events + events
    # This run processed the records it read; the earlier ones were skipped, not re-processed.
    assert new <= store_keys(home, resumed.id) <= old | new


@pytest.mark.e2e
def test_resume_replay_existing_resends_history(
    tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    script.on(Reply([Text("First answer.")]), prompt="First question")
    cenv = claude_env(tmp_path, fake)
    sid, first_events = first_run(cenv, launch, home)

    tui = launch(cenv, ("--resume", sid, "--happy-replay-existing"), events=home / "replayed.jsonl")
    tui.wait_ready()
    want = claude_uuids(first_events)
    tui.wait_events(lambda evs: claude_uuids(evs) == want, 20, "the earlier records to be re-sent")
    assert tui.exit() == 0
    assert without_ids(tui.events()) == without_ids(first_events)


# --------------------------------------------------------------------------------------------------
# 6. Claude killed with SIGKILL mid-turn


@dataclass
class KilledRun:
    code: int
    events: list[Envelope]
    stty_before: str | None
    stty_after: str | None
    output_at_kill: bytes = field(repr=False)  # what the terminal got up to the kill
    output: bytes = field(repr=False)  # ... and up to the end of the run
    claude_gone: bool
    status: str


@pytest.fixture(scope="module")
def sigkill_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilledRun]:
    """One run whose Claude gets SIGKILL mid-stream (shared by the checks below)."""
    root = tmp_path_factory.mktemp("sigkill")
    home = root / "happy"
    home.mkdir()
    script = Script(fallback=Reply([Text(UNSCRIPTED)]))
    add_slow_turn(script)
    with FakeAnthropic(script) as api:
        cenv = claude_env(root, api)
        tui = HappyTui(cenv, home, wrap_stty=True, terminal_replies=KITTY_TERMINAL)
        try:
            start_slow_turn(tui)
            claude = tui.claude_pid()
            at_kill = bytes(tui.raw)
            os.kill(claude, signal.SIGKILL)
            code = tui.wait_exit()
            yield KilledRun(
                code=code,
                events=tui.events(),
                stty_before=tui.stty_before,
                stty_after=tui.stty_after,
                output_at_kill=at_kill,
                output=bytes(tui.raw),
                claude_gone=not getpid_alive(claude),
                status=only_session(home).status,
            )
        finally:
            tui.kill()


@pytest.mark.e2e
def test_claude_sigkill_mid_turn(sigkill_run: KilledRun) -> None:
    run = sigkill_run
    assert run.code == 128 + signal.SIGKILL
    assert run.claude_gone
    events = run.events
    assert texts(events) == ["Starting now."]
    assert events[-1]["ev"] == {"t": "turn-end", "status": "failed"}
    assert turn_ends(events) == ["failed"]
    check_turns_balanced(events)
    assert run.status == "failed"
    # The terminal: Claude had switched modes on when it died (the alternate screen, mouse reporting,
    # bracketed paste, kitty keyboard flags, …), happy switched them off, and the termios settings are
    # back to what they were.
    assert {"?1049", "?2004", "kitty"} <= leftover_modes(run.output_at_kill)
    assert leftover_modes(run.output) == set()
    assert run.stty_before is not None
    assert run.stty_after == run.stty_before


@pytest.mark.e2e
def test_sigkill_resets_theme_notifications(sigkill_run: KilledRun) -> None:
    assert THEME_NOTIFICATIONS in leftover_modes(sigkill_run.output_at_kill)
    assert THEME_NOTIFICATIONS not in leftover_modes(sigkill_run.output)


@pytest.mark.e2e
def test_sigkill_resets_modify_other_keys(sigkill_run: KilledRun) -> None:
    assert MODIFY_OTHER_KEYS in leftover_modes(sigkill_run.output_at_kill)
    assert MODIFY_OTHER_KEYS not in leftover_modes(sigkill_run.output)


# --------------------------------------------------------------------------------------------------
# 7. SIGTERM / SIGHUP to happy


@pytest.mark.e2e
@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"]
)
def test_signal_to_happy_stops_claude(
    sig: signal.Signals, tmp_path: Path, script: Script, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    add_slow_turn(script)
    cenv = claude_env(tmp_path, fake)
    tui = launch(cenv, wrap_stty=True, terminal_replies=KITTY_TERMINAL)
    start_slow_turn(tui)
    claude = tui.claude_pid()
    os.kill(tui.happy_pid(), sig)
    code = tui.wait_exit(timeout=15)

    # As if the signal had ended happy itself (SIGINT: Claude exits 0 on it, the turn is still cut short).
    assert code == 128 + sig
    assert wait_pid_gone(claude, 0), "Claude is still running"
    events = tui.events()
    assert events[-1]["ev"] == {"t": "turn-end", "status": "cancelled"}
    assert turn_ends(events) == ["cancelled"]
    check_turns_balanced(events)
    assert only_session(home).status == "cancelled"
    assert tui.stty_before is not None
    assert tui.stty_after == tui.stty_before
    assert leftover_modes(bytes(tui.raw)) == set()


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("victim", "sig", "status"),
    [
        ("claude", signal.SIGKILL, "failed"),
        ("happy", signal.SIGTERM, "cancelled"),
        ("happy", signal.SIGINT, "cancelled"),
    ],
    ids=["SIGKILL-claude", "SIGTERM-happy", "SIGINT-happy"],
)
def test_stopped_during_first_reply(
    victim: str,
    sig: signal.Signals,
    status: str,
    tmp_path: Path,
    script: Script,
    fake: FakeAnthropic,
    launch: Launch,
    home: Path,
) -> None:
    """Claude dies while its first reply streams: nothing but the prompt is on disk (Claude writes an
    assistant record once its message is complete), and the prompt still gets its turn, ended."""
    script.on(Reply([Text(SLOW_TEXT, chunk_size=10)], chunk_delay=0.1), prompt="Count slowly")
    cenv = claude_env(tmp_path, fake)
    tui = launch(cenv)
    tui.wait_ready()
    tui.submit("Count slowly")
    tui.expect_screen("Counting3")
    # Design §2: the turn started when Claude took the prompt, long before its first reply record.
    started = [("user", "text"), ("agent", "turn-start")]
    tui.wait_events(lambda evs: kinds(evs) == started, 10, "turn-start while the first reply streams")
    claude = tui.claude_pid()
    os.kill(claude if victim == "claude" else tui.happy_pid(), sig)
    code = tui.wait_exit(timeout=15)

    assert code == 128 + sig
    assert wait_pid_gone(claude, 0), "Claude is still running"
    events = tui.events()
    assert kinds(events) == [("user", "text"), ("agent", "turn-start"), ("agent", "turn-end")]
    assert turn_ends(events) == [status]
    check_turns_balanced(events)
    assert only_session(home).status == status


# --------------------------------------------------------------------------------------------------
# 8. The PTY path with a stand-in Claude: resize, bytes in, exit code out

FAKE_CLAUDE = """\
import os, signal, sys, tty

def out(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]

def size(*_):
    cols, rows = os.get_terminal_size(0)
    out(b"SIZE %dx%d\\r\\n" % (rows, cols))

tty.setraw(0)
signal.signal(signal.SIGWINCH, size)
out(("ARGS " + " ".join(sys.argv[1:]) + "\\r\\n").encode())
size()
out(b"READY\\r\\n")
got = b""
while not got.endswith(b"\\x04\\x04\\x04"):
    chunk = os.read(0, 4096)
    if not chunk:
        sys.exit(9)
    got += chunk
out(b"GOT " + got[:-3].hex().encode() + b"\\r\\n")
sys.exit(3)
"""


@pytest.mark.e2e
def test_pty_resize_bytes_and_exit_code(
    tmp_path: Path, fake: FakeAnthropic, launch: Launch, home: Path
) -> None:
    stand_in = tmp_path / "fake-claude"
    stand_in.write_text(f"#!{sys.executable}\n{FAKE_CLAUDE}")
    stand_in.chmod(0o755)
    cenv = claude_env(tmp_path, fake)
    tui = launch(cenv, env={"HAPPY_CLAUDE_PATH": str(stand_in)}, dimensions=(40, 120), wrap_stty=True)
    tui.wait(lambda: b"READY" in tui.raw, 10, "the stand-in to start")
    assert b"SIZE 40x120" in tui.raw
    # happy's own flags for the launch: a pre-assigned session id and its settings overlay (hook).
    assert re.search(rb"ARGS --session-id [0-9a-f-]{36} --settings \S+\r\n", tui.raw), tui.raw[:300]

    tui.child.setwinsize(31, 97)
    tui.wait(lambda: b"SIZE 31x97" in tui.raw, 10, "the new size in the child")

    payload = "héllo ✓ 日本".encode() + b"\x1b[200~pasted\r\nline 2 \xe2\x9c\x93\x1b[201~" + b"\x03\x1a\r"
    tui.child.send(payload + b"\x04\x04\x04")
    tui.wait(lambda: re.search(rb"GOT [0-9a-f]*\r\n", tui.raw) is not None, 10, "the child's echo")
    assert f"GOT {payload.hex()}\r\n".encode() in tui.raw
    assert tui.wait_exit() == 3
    assert tui.stty_after == tui.stty_before

    # No transcript ever appeared: nothing mirrored, nothing crashed, the session ended failed.
    assert tui.events() == []
    session = only_session(home)
    assert session.status == "failed"
    assert store_envelopes(home, session.id) == []
    log = home / "happy.log"
    assert not log.exists() or "Traceback" not in log.read_text()


def test_missing_claude_binary_is_a_one_line_error(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(tmp_path),
        "HAPPY_HOME_DIR": str(tmp_path / "happy"),
        "HAPPY_CLAUDE_PATH": str(tmp_path / "no-such-claude"),
    }
    done = subprocess.run(
        [happy_executable(), "claude"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("happy: ")
    assert "HAPPY_CLAUDE_PATH" in lines[0] and "no-such-claude" in lines[0]
