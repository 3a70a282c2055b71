"""The SDK converter's rules, one by one (claude/converter.py), on SDK message objects."""

from __future__ import annotations

from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    RateLimitEvent,
    RateLimitInfo,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import ConversationResetMessage, ServerToolUseBlock

from happy_launcher.claude.converter import Converter
from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.records import SYNTHETIC, SYNTHETIC_SUBAGENT_PROMPT, Record
from happy_launcher.claude.sdk_items import Item, Partial, SessionStarted, TurnResult
from happy_launcher.protocol import Envelope, SequentialIds

AGENT = ToolUseBlock("toolu_agent", "Agent", {"description": "Sub", "prompt": "do the sub task"})


def assistant(*blocks: Any, uuid: str, parent: str | None = None, **extra: Any) -> AssistantMessage:
    return AssistantMessage(list(blocks), "claude-x", parent_tool_use_id=parent, uuid=uuid, **extra)


def records(items: list[Item]) -> list[Record]:
    assert all(isinstance(i, Record) for i in items)
    return [i for i in items if isinstance(i, Record)]


def result(subtype: str = "success", *, is_error: bool = False, **extra: Any) -> ResultMessage:
    return ResultMessage(subtype, 10, 5, is_error, 1, "sess", **extra)


def event(kind: str, **fields: Any) -> StreamEvent:
    return StreamEvent(uuid="se", session_id="sess", event={"type": kind, **fields})


def mapped(items: list[Item]) -> list[Envelope]:
    mapper = Mapper(SequentialIds())
    out = mapper.prompt_sent("go", 0)
    for item in items:
        if isinstance(item, Record):
            out += mapper.feed(item, 0)
        elif isinstance(item, TurnResult):
            out += mapper.end_turn(item.status, 0, item.service)
    return out


@pytest.fixture
def c() -> Converter:
    return Converter()


def test_assistant_message_is_a_transcript_shaped_record_under_its_uuid(c: Converter) -> None:
    message = assistant(
        ThinkingBlock("hmm", "sig"),
        TextBlock("Hi"),
        ToolUseBlock("toolu_1", "Bash", {"command": "ls"}),
        uuid="u1",
        message_id="msg_1",
        usage={"input_tokens": 3},
        stop_reason="tool_use",
    )
    (record,) = records(c.convert(message))
    assert record.kind == "assistant" and record.uuid == "u1" and record.parent_tool_use_id is None
    assert record.data["isSidechain"] is False and record.parent_uuid is None
    assert record.message == {
        "role": "assistant",
        "model": "claude-x",
        "id": "msg_1",
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 3},
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "Hi"},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
        ],
    }


def test_one_main_chain_and_one_chain_per_subagent(c: Converter) -> None:
    main1 = records(c.convert(assistant(AGENT, uuid="m1")))[0]
    root = records(
        c.convert(UserMessage([TextBlock("do the sub task")], uuid="s1", parent_tool_use_id=AGENT.id))
    )
    sub2 = records(c.convert(assistant(TextBlock("sub"), uuid="s2", parent=AGENT.id)))[0]
    main2 = records(c.convert(UserMessage([ToolResultBlock(AGENT.id, "done")], uuid="m2")))[0]
    assert [r.parent_uuid for r in (main1, *root, sub2, main2)] == [None, None, "s1", "m1"]
    assert [r.is_sidechain for r in (main1, *root, sub2, main2)] == [False, True, True, False]
    assert [r.parent_tool_use_id for r in (*root, sub2)] == [AGENT.id, AGENT.id]
    assert len(root) == 1  # the SDK sent the subagent's prompt: no synthetic root


def test_a_subagent_without_its_prompt_gets_a_synthetic_root_first(c: Converter) -> None:
    c.convert(assistant(AGENT, uuid="m1"))
    root, first = records(
        c.convert(assistant(ToolUseBlock("toolu_2", "Bash", {}), uuid="s1", parent=AGENT.id))
    )
    assert root.data[SYNTHETIC] == SYNTHETIC_SUBAGENT_PROMPT and root.uuid is None
    assert root.content == "do the sub task" and root.is_sidechain and root.parent_tool_use_id == AGENT.id
    assert first.uuid == "s1"
    assert records(c.convert(assistant(TextBlock("x"), uuid="s2", parent=AGENT.id)))[0].uuid == "s2"


def test_an_api_error_message_fails_the_turn_with_its_text_once(c: Converter) -> None:
    error = assistant(TextBlock("API Error: 529 Overloaded"), uuid="e1", error="server_error")
    items = [*c.convert(error), *c.convert(result(is_error=True, result="API Error: 529 Overloaded"))]
    assert records(items[:1])[0].data["isApiErrorMessage"] is True
    evs = [e.to_dict()["ev"] for e in mapped(items)]
    assert evs[2:] == [
        {"t": "service", "text": "API Error: 529 Overloaded"},
        {"t": "turn-end", "status": "failed"},
    ]


def test_main_chain_user_text_is_left_to_the_transcript(c: Converter) -> None:
    assert c.convert(UserMessage("a prompt replayed by the CLI", uuid="p1")) == []
    assert c.stats.left_to_transcript == 1
    (marker,) = records(c.convert(UserMessage([TextBlock("[Request interrupted by user]")], uuid="i1")))
    assert [e.to_dict()["ev"] for e in mapped([marker])][-1] == {
        "t": "turn-end",
        "status": "cancelled",
    }


def test_tool_results_keep_the_tool_use_result(c: Converter) -> None:
    c.convert(assistant(ToolUseBlock("toolu_1", "Bash", {"command": "ls"}), uuid="a1"))
    message = UserMessage(
        [ToolResultBlock("toolu_1", "out", False)], uuid="r1", tool_use_result={"stdout": "out"}
    )
    (record,) = records(c.convert(message))
    assert record.data["toolUseResult"] == {"stdout": "out"} and record.parent_uuid == "a1"
    assert record.content == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out", "is_error": False}
    ]
    assert c.interrupted() == []  # the call has its result


def test_a_task_notification_stops_its_subagent_where_the_transcript_would(c: Converter) -> None:
    items = [
        *c.convert(assistant(AGENT, uuid="m1")),
        *c.convert(
            UserMessage(
                [ToolResultBlock(AGENT.id, "launched")],
                uuid="m2",
                tool_use_result={"status": "async_launched", "agentId": "ag1"},
            )
        ),
        *c.convert(assistant(TextBlock("working"), uuid="s1", parent=AGENT.id)),
        *c.convert(
            TaskNotificationMessage(
                "task_notification",
                {},
                "ag1",
                "completed",
                "/out",
                "done",
                "n1",
                "sess",
                tool_use_id=AGENT.id,
            )
        ),
    ]
    notification = records(items)[-1]
    assert notification.uuid is None and notification.data["origin"] == {"kind": "task-notification"}
    assert [e.ev.t for e in mapped(items)][-3:] == ["text", "text", "stop"]


@pytest.mark.parametrize(
    ("message", "want"),
    [
        (result(terminal_reason="completed"), TurnResult("completed", None, "completed")),
        (
            result("error_during_execution", is_error=True, terminal_reason="aborted_streaming"),
            TurnResult("cancelled", None, "aborted_streaming"),
        ),
        (
            result("error_during_execution", is_error=True, terminal_reason="aborted_tools"),
            TurnResult("cancelled", None, "aborted_tools"),
        ),
        (
            result("error_during_execution", is_error=True),
            TurnResult("cancelled", None, "error_during_execution"),
        ),
        (
            result(is_error=True, terminal_reason="api_error", api_error_status=529, result="API Error: 529"),
            TurnResult("failed", "API Error: 529", "api_error"),
        ),
        (
            result("error_max_turns", is_error=True, terminal_reason="max_turns"),
            TurnResult("failed", "Claude stopped: it reached the maximum number of turns.", "max_turns"),
        ),
        (
            result(is_error=True, api_error_status=500),
            TurnResult("failed", "Claude stopped with an error (success, HTTP 500).", "success"),
        ),
    ],
)
def test_result_messages_end_the_turn(c: Converter, message: ResultMessage, want: TurnResult) -> None:
    assert c.convert(message) == [want]


def test_a_result_of_a_turn_claude_began_lists_the_prompts_it_took_in(c: Converter) -> None:
    notification = {"kind": "task-notification"}
    taken = result(origin=notification, user_message_uuid="p2", user_message_uuids=["p1", "p2"])
    assert c.convert(taken) == [TurnResult("completed", None, "success", ("p1", "p2"))]
    assert c.convert(result(origin=notification)) == [TurnResult("completed", None, "success", ())]
    assert c.convert(result(origin={"kind": "human"}, user_message_uuid="p3"))[0].taken is None  # type: ignore[union-attr]


def test_stream_events_are_partial_text_only(c: Converter) -> None:
    assert c.convert(event("content_block_delta", delta={"type": "text_delta", "text": "He"})) == [
        Partial("He")
    ]
    assert c.convert(event("content_block_delta", delta={"type": "thinking_delta", "thinking": "h"})) == [
        Partial("h", thinking=True)
    ]
    assert (
        c.convert(event("content_block_delta", delta={"type": "input_json_delta", "partial_json": "{"})) == []
    )
    assert c.convert(StreamEvent(uuid="x", session_id="s", event="not a dict")) == []  # type: ignore[arg-type]


def test_a_one_block_reply_waits_for_its_final_usage(c: Converter) -> None:
    c.convert(event("message_start"))
    reply = assistant(
        TextBlock("Hi"), uuid="a1", message_id="msg_1", usage={"input_tokens": 9, "output_tokens": 1}
    )
    assert c.convert(reply) == []
    assert c.convert(event("content_block_stop", index=0)) == []
    delta = event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 7})
    (record,) = records(c.convert(delta))
    assert record.message["usage"] == {"input_tokens": 9, "output_tokens": 7}
    assert record.message["stop_reason"] == "end_turn"


def test_the_next_block_or_any_message_releases_a_waiting_reply_as_it_is(c: Converter) -> None:
    c.convert(event("message_start"))
    first = assistant(TextBlock("Hi"), uuid="a1", message_id="msg_1", usage={"output_tokens": 1})
    c.convert(first)
    start = event("content_block_start", index=1, content_block={"type": "text", "text": ""})
    assert [r.uuid for r in records(c.convert(start))] == ["a1"]
    second = assistant(TextBlock("more"), uuid="a2", message_id="msg_1")
    assert [r.uuid for r in records(c.convert(second))] == ["a2"]  # not the reply's first record
    c.convert(assistant(TextBlock("next"), uuid="a3", message_id="msg_2"))
    items = c.convert(UserMessage([TextBlock("[Request interrupted by user]")], uuid="i1"))
    assert [r.uuid for r in records(items)] == ["a3", "i1"]
    c.convert(assistant(TextBlock("last"), uuid="a4", message_id="msg_3"))
    assert [r.uuid for r in records(c.flush())] == ["a4"]


def test_init_gives_the_session_id(c: Converter) -> None:
    assert c.convert(SystemMessage("init", {"session_id": "S1", "type": "system"})) == [SessionStarted("S1")]
    assert c.session_id == "S1"
    assert records(c.convert(assistant(TextBlock("x"), uuid="a")))[0].data["sessionId"] == "S1"
    assert c.convert(SystemMessage("status", {"status": "requesting"})) == []


def test_unknown_and_silent_messages_and_blocks(c: Converter) -> None:
    assert c.convert(object()) == []
    assert c.convert(RateLimitEvent(RateLimitInfo("allowed"), "u", "s")) == []
    assert c.convert(TaskStartedMessage("task_started", {}, "t", "d", "u", "s")) == []
    server = ServerToolUseBlock("srv_1", "web_search", {"query": "x"})
    (record,) = records(c.convert(assistant(server, 42, TextBlock("ok"), uuid="a1")))
    assert [b["type"] for b in record.message["content"]] == ["server_tool_use", "text"]
    assert dict(c.stats.unknown_messages) == {"object": 1}
    assert dict(c.stats.unknown_blocks) == {"int": 1}


def test_malformed_messages_never_crash(c: Converter) -> None:
    broken: list[Any] = [
        AssistantMessage("not a list", "m"),  # type: ignore[arg-type]
        AssistantMessage([ToolUseBlock("t", "Agent", "not a dict")], "m", uuid="x"),  # type: ignore[arg-type]
        UserMessage(None),  # type: ignore[arg-type]
        ResultMessage("", 0, 0, True, 0, ""),
        TaskNotificationMessage("task_notification", {}, "t", "completed", "", "", "u", "s"),
        SystemMessage("init", None),  # type: ignore[arg-type]
    ]
    items = [item for message in broken for item in c.convert(message)]
    items += c.convert(assistant(TextBlock("still fine"), uuid="ok"))
    assert mapped(items)[-1].to_dict()["ev"] == {"t": "text", "text": "still fine"}


def test_interrupted_results_for_the_calls_still_running(c: Converter) -> None:
    items = [
        *c.convert(assistant(ToolUseBlock("toolu_1", "Bash", {"command": "sleep 9"}), uuid="a1")),
        *c.convert(assistant(AGENT, uuid="a2")),
        *c.convert(
            assistant(ToolUseBlock("toolu_2", "Read", {"file_path": "/x"}), uuid="s1", parent=AGENT.id)
        ),
    ]
    synthetic = records(c.interrupted())
    calls = [(r.content[0]["tool_use_id"], r.parent_tool_use_id) for r in synthetic]  # type: ignore[index]
    assert calls == [("toolu_2", AGENT.id), (AGENT.id, None), ("toolu_1", None)]
    assert c.interrupted() == []
    evs = [(e.ev.t, e.subagent is not None) for e in mapped([*items, *synthetic])]
    assert evs[-3:] == [("tool-call-end", True), ("stop", True), ("tool-call-end", False)]


def test_a_conversation_reset_starts_a_new_chain(c: Converter) -> None:
    c.convert(assistant(TextBlock("before"), uuid="a1"))
    c.convert(ConversationResetMessage("conv2", "r1", "sess"))
    assert records(c.convert(assistant(TextBlock("after"), uuid="a2")))[0].parent_uuid is None
