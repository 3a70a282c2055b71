"""Replays of transcripts written by the real Claude Code (tests/fixtures/golden, made by
scripts/gen_fixtures.py against the fake Messages API): the exact envelope sequences."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from happy_launcher.protocol import Envelope, SequentialIds, ToolCallEndEv, ToolCallStartEv, parse_envelope
from happy_launcher.session.replay import replay_file

GOLDEN = Path(__file__).parents[2] / "fixtures" / "golden"

SUBAGENT_PROMPT = "SUBAGENT-TASK: run `echo from-subagent` with Bash and report what it printed."
U, A = "user", "agent"
THOUGHT = "The user wants me to think first. Two plus two is four."
ECHO_HELLO = {"command": "echo hello", "description": "Print hello"}
ECHO_SUB = {"command": "echo from-subagent", "description": "Echo from the subagent"}

EXPECTED: dict[str, list[tuple[str, str, str, dict[str, Any]]]] = {
    "plain_reply": [
        (U, "", "text", {"text": "Say hello"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": "Hello! This is a scripted reply."}),
        (A, "", "turn-end", {"status": "completed"}),
    ],
    "thinking": [
        (U, "", "text", {"text": "Think first: what is 2 + 2?"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": THOUGHT, "thinking": True}),
        (A, "", "text", {"text": "After thinking: 2 + 2 = 4."}),
        (A, "", "turn-end", {"status": "completed"}),
    ],
    "bash_tool": [
        (U, "", "text", {"text": "Run echo hello"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": "I'll run it."}),
        (A, "", "tool-call-start", {"name": "Bash", "title": "Print hello", "args": ECHO_HELLO}),
        (A, "", "tool-call-end", {}),
        (A, "", "text", {"text": "The command printed: hello"}),
        (A, "", "turn-end", {"status": "completed"}),
    ],
    "two_turns": [
        (U, "", "text", {"text": "First question"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": "First answer."}),
        (A, "", "turn-end", {"status": "completed"}),
        (U, "", "text", {"text": "Second question"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": "Second answer."}),
        (A, "", "turn-end", {"status": "completed"}),
    ],
    "interrupted": [
        (U, "", "text", {"text": "Count slowly to 200"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {}),  # the partial text streamed before Esc
        (A, "", "turn-end", {"status": "cancelled"}),
        (U, "", "text", {"text": "Never mind, stop"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": "OK, stopped counting."}),
        (A, "", "turn-end", {"status": "completed"}),
    ],
    "api_error": [
        (U, "", "text", {"text": "This will fail"}),
        (A, "", "turn-start", {}),
        (A, "", "service", {}),
        (A, "", "turn-end", {"status": "failed"}),
        (U, "", "text", {"text": "Try again"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": "It works now."}),
        (A, "", "turn-end", {"status": "completed"}),
    ],
    "agent_foreground": [
        (U, "", "text", {"text": "Delegate the echo to a subagent"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": "Delegating."}),
        (A, "S", "start", {"title": "Echo from a subagent"}),
        (A, "S", "text", {"text": SUBAGENT_PROMPT}),
        (A, "S", "tool-call-start", {"name": "Bash", "title": "Echo from the subagent", "args": ECHO_SUB}),
        (A, "S", "tool-call-end", {}),
        (A, "S", "text", {"text": "The command printed: from-subagent"}),
        (A, "S", "stop", {}),
        (A, "", "text", {"text": "The subagent reported: from-subagent"}),
        (A, "", "turn-end", {"status": "completed"}),
    ],
    "agent_background": [
        (U, "", "text", {"text": "Delegate the echo to a subagent"}),
        (A, "", "turn-start", {}),
        (A, "", "text", {"text": "Delegating."}),
        (A, "S", "start", {"title": "Echo from a subagent"}),
        (A, "", "text", {"text": "A background agent is on it; I'll report when it finishes."}),
        (A, "", "turn-end", {"status": "completed"}),
        # The subagent works after the parent turn ended: its envelopes open a new turn.
        (A, "", "turn-start", {}),
        (A, "S", "text", {"text": SUBAGENT_PROMPT}),
        (A, "S", "tool-call-start", {"name": "Bash", "title": "Echo from the subagent", "args": ECHO_SUB}),
        (A, "S", "tool-call-end", {}),
        (A, "S", "text", {"text": "The command printed: from-subagent"}),
        (A, "S", "stop", {}),  # the task-notification: not user text
        (A, "", "text", {"text": "The background agent finished: it printed from-subagent."}),
        (A, "", "turn-end", {"status": "completed"}),
    ],
}


def transcript(name: str) -> Path:
    (path,) = (GOLDEN / name).glob("*.jsonl")
    return path


def replay(name: str) -> list[Envelope]:
    out = io.BytesIO()
    replay_file(transcript(name), SequentialIds(), out)
    return [parse_envelope(line) for line in out.getvalue().splitlines()]


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_golden_replay(name: str) -> None:
    envelopes = replay(name)
    got = []
    for env, expected in zip(envelopes, EXPECTED[name], strict=False):
        ev = env.to_dict()["ev"]
        fields = {k: ev[k] for k in expected[3] if k in ev}
        got.append((env.role, "S" if env.subagent else "", ev["t"], fields))
    assert got == EXPECTED[name]
    assert len(envelopes) == len(EXPECTED[name])
    # Calls are matched: every tool-call-end follows its start, within the same subagent.
    starts = {e.ev.call: e.subagent for e in envelopes if isinstance(e.ev, ToolCallStartEv)}
    ends = {e.ev.call: e.subagent for e in envelopes if isinstance(e.ev, ToolCallEndEv)}
    assert starts == ends


def test_usage_is_reported_once_per_reply() -> None:
    usages = [e.usage for e in replay("thinking") if e.usage is not None]
    assert len(usages) == 1 and usages[0]["output_tokens"] > 0


def test_no_field_is_null() -> None:
    """Design §1: optional fields are omitted, never null (real replies carry null usage fields)."""

    def nulls(value: Any, where: str) -> list[str]:
        if isinstance(value, dict):
            return [p for k, v in value.items() for p in nulls(v, f"{where}.{k}")]
        if isinstance(value, list):
            return [p for v in value for p in nulls(v, f"{where}[]")]
        return [where] if value is None else []

    for name in EXPECTED:
        found = [p for e in replay(name) for p in nulls(orjson.loads(e.to_json()), name)]
        assert found == []


def test_replay_is_deterministic() -> None:
    first, second = replay("agent_background"), replay("agent_background")
    assert [e.to_dict() for e in first] == [e.to_dict() for e in second]
