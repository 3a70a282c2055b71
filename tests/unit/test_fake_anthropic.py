"""Tests of the fake Messages API (tests/support/fake_anthropic.py) and of claude_env.py."""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.claude_env import make_claude_env, project_slug
from tests.support.fake_anthropic import (
    ErrorReply,
    FakeAnthropic,
    RecordedRequest,
    Reply,
    Rule,
    Script,
    Text,
    Thinking,
    ToolUse,
)

TOOLS = [{"name": "Bash", "input_schema": {}}, {"name": "Agent", "input_schema": {}}]


def body(messages: list[dict[str, Any]], *, stream: bool = True, tools: Any = TOOLS) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 100, "stream": stream, "messages": messages, "tools": tools}


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def request_of(b: dict[str, Any]) -> RecordedRequest:
    return RecordedRequest(
        index=0, method="POST", path="/v1/messages", query="", headers={}, body=b, received_at=0.0
    )


def post(fake: FakeAnthropic, b: Any, path: str = "/v1/messages?beta=true") -> tuple[int, str, str]:
    conn = http.client.HTTPConnection(fake.host, fake.port, timeout=10)
    try:
        conn.request("POST", path, body=json.dumps(b), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read().decode()
    finally:
        conn.close()


def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    assert text.endswith("\n\n")
    for frame in text.strip("\n").split("\n\n"):
        lines = frame.split("\n")
        assert lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
        data = json.loads(lines[1][len("data: ") :])
        assert data["type"] == lines[0][len("event: ") :]
        events.append((data["type"], data))
    return events


# --------------------------------------------------------------------------------------------------
# SSE framing


def test_stream_round_trip_rebuilds_every_block() -> None:
    reply = Reply(
        [
            Thinking("pondering the question", chunk_size=5),
            Text("Hello, streaming world!", chunk_size=4),
            ToolUse("Bash", {"command": "echo hi", "description": "say hi"}, chunk_size=7),
        ]
    )
    with FakeAnthropic(Script(fallback=reply)) as fake:
        status, ctype, raw = post(fake, body([user("hi")]))
    assert status == 200
    assert ctype.startswith("text/event-stream")
    events = parse_sse(raw)
    kinds = [k for k, _ in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert re.fullmatch(r"msg_01[A-Za-z0-9]{22}", start["id"])
    assert start["model"] == "claude-test"
    assert start["usage"]["input_tokens"] > 0

    blocks: dict[int, dict[str, Any]] = {}
    for kind, data in events:
        if kind == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"], _json="")
        elif kind == "content_block_delta":
            b, d = blocks[data["index"]], data["delta"]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                b["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["signature"] += d["signature"]
            else:
                assert d["type"] == "input_json_delta"
                b["_json"] += d["partial_json"]
    assert [b["type"] for b in blocks.values()] == ["thinking", "text", "tool_use"]
    assert blocks[0]["thinking"] == "pondering the question" and blocks[0]["signature"]
    assert blocks[1]["text"] == "Hello, streaming world!"
    assert blocks[2]["name"] == "Bash"
    assert re.fullmatch(r"toolu_[A-Za-z0-9]{24}", blocks[2]["id"])
    assert json.loads(blocks[2]["_json"]) == {"command": "echo hi", "description": "say hi"}
    # Chunking really happened (several deltas per block).
    assert kinds.count("content_block_delta") >= 5 + 6 + 5
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert fake.requests[0].tool_use_ids == [blocks[2]["id"]]


def test_non_streaming_json_and_other_paths() -> None:
    with FakeAnthropic(Script(fallback=Reply([Text("plain")]))) as fake:
        status, ctype, raw = post(fake, body([user("hi")], stream=False))
        assert status == 200 and ctype == "application/json"
        msg = json.loads(raw)
        assert msg["content"] == [{"type": "text", "text": "plain"}]
        assert msg["stop_reason"] == "end_turn"
        status, _, raw = post(fake, {}, path="/v1/other")
        assert status == 404 and json.loads(raw)["error"]["type"] == "not_found_error"
        assert len(fake.requests) == 1 and len(fake.all_requests) == 2


def test_error_replies() -> None:
    script = Script(
        [Rule(name="500", prompt="fail hard", reply=ErrorReply(500, "boom"))], fallback=ErrorReply(529)
    )
    with FakeAnthropic(script) as fake:
        status, _, raw = post(fake, body([user("hi")]))
        assert status == 529
        assert json.loads(raw) == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        }
        status, _, raw = post(fake, body([user("fail hard")], stream=False))
        assert status == 500
        assert json.loads(raw)["error"] == {"type": "api_error", "message": "boom"}
    assert [(r.rule, r.completed) for r in fake.requests] == [("fallback", True), ("500", True)]


# --------------------------------------------------------------------------------------------------
# Rule matching


def test_rules_match_on_last_user_text_without_reminders() -> None:
    script = Script(
        [
            Rule(name="exact", exact="ping", reply=Reply([Text("pong")])),
            Rule(name="substring", prompt="weather", reply=Reply([Text("sunny")])),
            Rule(name="raw", raw_prompt="<task-notification>", reply=Reply([Text("noted")])),
        ],
        fallback=Reply([Text("fallback")]),
    )
    reminder = "<system-reminder>\nweather ping\n</system-reminder>"
    assert script.choose(request_of(body([user(reminder, "ping")])))[0] == "exact"
    assert script.choose(request_of(body([user(reminder, "How is the weather?")])))[0] == "substring"
    # The reminder's text never matches `prompt`/`exact`; only raw_prompt sees reminders.
    assert script.choose(request_of(body([user(reminder)])))[0] == "fallback"
    wrapped = "<system-reminder>\n<task-notification>\n<task-id>a1</task-id>\n</task-notification>"
    assert script.choose(request_of(body([user(wrapped)])))[0] == "raw"
    # Only the LAST user message counts.
    msgs = [user("ping"), {"role": "assistant", "content": [{"type": "text", "text": "pong"}]}, user("x")]
    assert script.choose(request_of(body(msgs)))[0] == "fallback"


def test_rules_match_tool_results_and_subagent_prompt() -> None:
    tool_id = "toolu_01abcdefghijklmnopqrstuv"
    conversation = [
        user("SUB: do it"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "hi"}]},
    ]
    req = request_of(body(conversation))
    assert req.tool_results[0].tool_name == "Bash" and req.tool_results[0].content == "hi"
    assert req.first_user_text == "SUB: do it" and req.last_user_text == ""
    script = Script(
        [
            Rule(name="main bash", first_prompt="MAIN", tool_result="Bash", reply=Reply([Text("a")])),
            Rule(name="by id", tool_use_id="toolu_01zzzzzzzzzzzzzzzzzzzzzz", reply=Reply([Text("b")])),
            Rule(name="sub bash", first_prompt="SUB", tool_result="Bash", reply=Reply([Text("c")])),
        ]
    )
    assert script.choose(req)[0] == "sub bash"
    assert Rule(tool_use_id=tool_id, reply=Reply()).matches(req)
    assert not Rule(tool_result="Agent", reply=Reply()).matches(req)


def test_rule_times_tool_offer_and_callable_replies() -> None:
    once = Rule(name="once", prompt="go", times=1, reply=Reply([ToolUse("Agent", {"prompt": "p"})]))
    script = Script([once], fallback=lambda req: Reply([Text(f"echo: {req.last_user_text}")]))
    assert script.choose(request_of(body([user("go")])))[0] == "once"
    name, answer = script.choose(request_of(body([user("go")])))
    assert name == "fallback" and isinstance(answer, Reply)
    assert answer.blocks == [Text("echo: go")]
    # A tool_use for a tool the request does not offer is never sent: the rule is skipped.
    script = Script([Rule(name="agent", prompt="go", reply=Reply([ToolUse("Agent")]))])
    assert script.choose(request_of(body([user("go")], tools=[{"name": "Bash"}])))[0] == "fallback"
    # ... and a fallback naming one is replaced by an explanatory text.
    script = Script(fallback=Reply([ToolUse("Write")]))
    _, answer = script.choose(request_of(body([user("go")])))
    assert isinstance(answer, Reply) and isinstance(answer.blocks[0], Text)
    assert "Write" in answer.blocks[0].text


# --------------------------------------------------------------------------------------------------
# Recording, waiting, closing


def test_records_requests_and_waits_without_sleeping() -> None:
    with FakeAnthropic() as fake:
        with pytest.raises(TimeoutError):
            fake.wait_for_requests(1, timeout=0.05)
        results: list[int] = []
        threads = [
            threading.Thread(target=lambda i=i: results.append(post(fake, body([user(f"n{i}")]))[0]))
            for i in range(3)
        ]
        for t in threads:
            t.start()
        reqs = fake.wait_for_requests(3, timeout=10)
        fake.wait_for_completed(3, timeout=10)
        for t in threads:
            t.join(10)
    assert sorted(r.last_user_text for r in reqs) == ["n0", "n1", "n2"]
    assert results == [200, 200, 200]
    assert [r.index for r in reqs] == [0, 1, 2]
    assert all(r.query == "beta=true" and r.stream for r in reqs)


def test_slow_stream_hang_up_and_prompt_close() -> None:
    slow = Reply([Text("x" * 100, chunk_size=1)], chunk_delay=0.5)  # ~50 s if streamed to the end
    fake = FakeAnthropic(Script(fallback=slow))
    errors: list[BaseException] = []

    def client() -> None:
        try:
            post(fake, body([user("hi")]))
        except (OSError, http.client.HTTPException) as exc:
            errors.append(exc)

    t = threading.Thread(target=client)
    t.start()
    fake.wait_until(lambda reqs: bool(reqs) and reqs[0].events_sent >= 3, timeout=10)
    started = time.monotonic()
    fake.close()
    assert time.monotonic() - started < 3
    t.join(10)
    assert not t.is_alive()
    req = fake.requests[0]
    assert not req.completed and req.disconnected


# --------------------------------------------------------------------------------------------------
# claude_env


def test_project_slug() -> None:
    assert project_slug("/tmp/a b/Ünï_x.y") == "-tmp-a-b--n--x-y"
    assert project_slug("/x/\U0001f600") == "-x---"  # a surrogate pair is two code units
    # Observed with Claude Code 2.1.329 (a cwd longer than 200 characters).
    long_cwd = "/tmp/slug-ov08xc1t/project/" + "very-long-directory-name_é_" * 9 + "/x"
    assert project_slug(long_cwd) == (
        "-tmp-slug-ov08xc1t-project-very-long-directory-name---very-long-directory-name---very-long-"
        "directory-name---very-long-directory-name---very-long-directory-name---very-long-directory-"
        "name---very-long-d-oisfik"
    )


def test_make_claude_env_seeds_config(tmp_path: Path) -> None:
    env = make_claude_env(tmp_path, "http://127.0.0.1:9", background_tasks=False, max_retries=0)
    assert env.env["HOME"] == str(env.home) and env.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env.env["CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"] == "1"
    assert env.env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert env.env["IS_SANDBOX"] == "1" and env.env["ANTHROPIC_API_KEY"].startswith("sk-test-")
    cfg = json.loads(env.claude_json.read_text())
    assert cfg["hasCompletedOnboarding"] is True
    assert cfg["customApiKeyResponses"]["approved"] == [env.api_key[-20:]]
    assert cfg["projects"][str(env.cwd)]["hasTrustDialogAccepted"] is True
    settings = json.loads(env.settings_path.read_text())
    assert settings["permissions"]["disableAutoMode"] == "disable"
    assert env.transcript_path("s1") == env.config_dir / "projects" / project_slug(env.cwd) / "s1.jsonl"
    alt = make_claude_env(tmp_path / "alt", "http://127.0.0.1:9", use_config_dir=True)
    assert alt.env["CLAUDE_CONFIG_DIR"] == str(alt.config_dir)
    assert alt.claude_json == alt.config_dir / ".claude.json" and alt.claude_json.is_file()
