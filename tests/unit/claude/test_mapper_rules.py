"""Every row of seed 000's mapping table and the design §2 decisions."""

from __future__ import annotations

from typing import Any

import pytest

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.mapper_state import OrphanLimits
from happy_launcher.claude.records import make_record
from happy_launcher.protocol import Envelope, SequentialIds, subagent_id
from tests.support.records import (
    assistant,
    rec,
    simplify,
    system,
    text,
    thinking,
    tool_result,
    tool_use,
    user,
)

NOW = 5


def evs(envelopes: list[Envelope]) -> list[dict[str, Any]]:
    return [e.to_dict()["ev"] for e in envelopes]


def feed_all(m: Mapper, *records: Any) -> list[Envelope]:
    out: list[Envelope] = []
    for r in records:
        out += m.feed(r, NOW)
    return out


@pytest.fixture
def m() -> Mapper:
    return Mapper(SequentialIds())


def test_text_and_thinking_blocks(m: Mapper) -> None:
    out = m.feed(assistant(thinking("hmm"), text("Hello"), text("")), NOW)
    assert evs(out) == [
        {"t": "turn-start"},
        {"t": "text", "text": "hmm", "thinking": True},
        {"t": "text", "text": "Hello"},
    ]
    assert "thinking" not in out[2].to_dict()["ev"]  # optional fields are omitted, never null


@pytest.mark.parametrize(
    ("name", "args", "title"),
    [
        ("Bash", {"command": "ls -la"}, "ls -la"),
        ("Bash", {"command": "ls", "description": "List files"}, "List files"),
        ("Read", {"file_path": "/src/a.py"}, "/src/a.py"),
        ("Edit", {"file_path": "/src/b.py", "old_string": "x"}, "/src/b.py"),
        ("Grep", {"pattern": "TODO"}, "TODO"),
        ("Glob", {"pattern": "**/*.py"}, "**/*.py"),
        ("mcp__server__tool", {"x": 1}, "mcp__server__tool call"),
        ("Bash", {"command": "x" * 200}, "x" * 79 + "…"),
    ],
)
def test_tool_call_titles(m: Mapper, name: str, args: dict[str, Any], title: str) -> None:
    out = m.feed(assistant(tool_use("toolu_a", name, **args)), NOW)
    ev = out[-1].to_dict()["ev"]
    assert ev["t"] == "tool-call-start" and ev["name"] == name and ev["args"] == args
    assert ev["title"] == title and len(ev["title"]) <= 80


def test_tool_result_ends_known_calls_only(m: Mapper) -> None:
    out = feed_all(
        m,
        assistant(tool_use("toolu_a", "Read", file_path="/x")),
        user([tool_result("toolu_a")]),
        user([tool_result("toolu_never_started")]),
    )
    assert [e["t"] for e in evs(out)] == ["turn-start", "tool-call-start", "tool-call-end"]
    assert m.state.stats.unmatched_tool_results == 1


@pytest.mark.parametrize("tool", ["Task", "Agent"])
def test_subagent_tool_hides_parent_call_and_stops_on_result(m: Mapper, tool: str) -> None:
    out = feed_all(
        m,
        assistant(tool_use("toolu_t", tool, description="Explore", prompt="Look around")),
        user([tool_result("toolu_t", "done")]),
    )
    sid = subagent_id("toolu_t")
    assert simplify(out, {"toolu_t": sid}) == [
        {"role": "agent", "turn": "T1", "ev": {"t": "turn-start"}},
        {"role": "agent", "turn": "T1", "subagent": "toolu_t", "ev": {"t": "start", "title": "Explore"}},
        {"role": "agent", "turn": "T1", "subagent": "toolu_t", "ev": {"t": "stop"}},
    ]


@pytest.mark.parametrize(
    ("args", "title"),
    [
        ({"description": "D", "subagent_type": "S", "prompt": "P"}, "D"),
        ({"subagent_type": "S", "prompt": "P"}, "S"),
        ({"prompt": "P"}, "P"),
        ({}, None),
    ],
)
def test_subagent_start_title(m: Mapper, args: dict[str, Any], title: str | None) -> None:
    out = m.feed(assistant(tool_use("toolu_t", "Agent", **args)), NOW)
    assert out[-1].to_dict()["ev"] == ({"t": "start", "title": title} if title else {"t": "start"})


def test_user_prompt_closes_open_turn_then_one_user_text_then_its_turn_starts(m: Mapper) -> None:
    """Design §2: the turn starts as soon as Claude has taken the prompt, not with its first reply."""
    out = feed_all(m, assistant(text("a")), user("next question", uuid="u-9"))
    assert [(e.role, e.ev.t) for e in out] == [
        ("agent", "turn-start"),
        ("agent", "text"),
        ("agent", "turn-end"),
        ("user", "text"),
        ("agent", "turn-start"),
    ]
    assert out[2].to_dict()["ev"] == {"t": "turn-end", "status": "completed"}
    assert out[3].turn is None and out[3].claudeUuid == "u-9"
    assert out[4].turn != out[0].turn and m.turn_open
    reply = m.feed(assistant(text("b")), NOW)
    assert [(e.ev.t, e.turn) for e in reply] == [("text", out[4].turn)]  # the reply joins that turn


def test_first_prompt_starts_a_turn_with_nothing_to_close(m: Mapper) -> None:
    assert [(e.role, e.ev.t) for e in m.feed(user("hello"), NOW)] == [
        ("user", "text"),
        ("agent", "turn-start"),
    ]


def test_sidechain_root_prompt_matches_pending_task_and_ancestry_follows(m: Mapper) -> None:
    out = feed_all(
        m,
        assistant(tool_use("toolu_t", "Task", prompt="Find TODOs")),
        user("Find TODOs", uuid="s1", sidechain=True),
        assistant(text("Searching"), uuid="s2", parent="s1", sidechain=True),
    )
    sid = subagent_id("toolu_t")
    assert [(e.subagent, e.ev.t) for e in out] == [
        (None, "turn-start"),
        (sid, "start"),
        (sid, "text"),
        (sid, "text"),
    ]
    assert evs(out)[2] == {"t": "text", "text": "Find TODOs"}


def test_ancestry_applies_to_sidechain_records_only(m: Mapper) -> None:
    """A main-chain record whose parent is a subagent record stays on the main chain (Happy lost these)."""
    out = feed_all(
        m,
        assistant(tool_use("toolu_t", "Task", prompt="p")),
        assistant(text("sub"), uuid="s1", sidechain=True, parent_tool_use_id="toolu_t"),
        assistant(text("main after"), parent="s1"),
    )
    assert out[-1].subagent is None and evs(out)[-1] == {"t": "text", "text": "main after"}


def test_silent_record_kinds_and_unknown_kinds_counted(m: Mapper) -> None:
    records = [
        system("api_error"),
        system("compact_boundary"),
        rec({"type": "summary", "summary": "s", "leafUuid": "x"}),
        rec({"type": "file-history-snapshot", "messageId": "m"}),
        rec({"type": "queue-operation", "operation": "enqueue"}),
        rec({"type": "last-prompt", "lastPrompt": "x"}),
        rec({"type": "attachment", "uuid": "att", "attachment": {"type": "skill_listing"}}),
        rec({"type": "brand-new-kind", "uuid": "n1"}),
        rec({"type": "brand-new-kind"}),
        rec({"no": "type"}),
        user("meta stuff", isMeta=True),
        user("<command-name>/clear</command-name>"),
        user("<local-command-stdout>ok</local-command-stdout>"),
    ]
    assert feed_all(m, *records) == []
    assert m.state.stats.unknown_kinds == {"brand-new-kind": 2, "<no type>": 1}


def test_compact_summary_is_not_user_input_and_invents_no_turn(m: Mapper) -> None:
    """After `/compact` Claude writes its summary as a user record: not a prompt (design §2)."""
    feed_all(m, user("q"), assistant(text("a"), stop_reason="end_turn"), system("turn_duration"))
    summary = user(
        "This session is being continued from a previous conversation…",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    out = feed_all(
        m,
        system("compact_boundary"),
        summary,
        user("<command-name>/compact</command-name>"),
        user("<local-command-stdout>Compacted</local-command-stdout>"),
    )
    assert out == [] and not m.turn_open
    assert m.finish(NOW) == []


def test_turn_duration_closes_the_turn(m: Mapper) -> None:
    out = feed_all(m, assistant(text("hi"), stop_reason="end_turn"), system("turn_duration", durationMs=9))
    assert evs(out)[-1] == {"t": "turn-end", "status": "completed"}
    assert not m.turn_open
    assert m.feed(system("turn_duration"), NOW) == []  # no turn open: nothing to close


@pytest.mark.parametrize(
    "content",
    [
        "[Request interrupted by user]",
        [text("[Request interrupted by user for tool use]")],
    ],
)
def test_interrupt_marker_cancels_turn_and_is_not_user_text(m: Mapper, content: Any) -> None:
    out = feed_all(m, assistant(text("partial")), user(content))
    assert [e.ev.t for e in out] == ["turn-start", "text", "turn-end"]
    assert evs(out)[-1] == {"t": "turn-end", "status": "cancelled"}


def test_api_error_record_becomes_service_text_and_fails_turn(m: Mapper) -> None:
    err = assistant(text("API Error: 529 overloaded"), isApiErrorMessage=True, model="<synthetic>")
    out = feed_all(m, user("hi"), err)
    assert evs(out)[1:] == [
        {"t": "turn-start"},
        {"t": "service", "text": "API Error: 529 overloaded"},
        {"t": "turn-end", "status": "failed"},
    ]


def test_a_synthetic_reply_of_a_resume_repair_is_not_agent_text(m: Mapper) -> None:
    """Resuming an interrupted turn, Claude writes "No response requested." (model `<synthetic>`)."""
    repair = assistant(text("No response requested."))
    repair.message["model"] = "<synthetic>"
    out = feed_all(m, user("hi"), repair, assistant(text("real"), stop_reason="end_turn"))
    assert evs(out)[1:] == [{"t": "turn-start"}, {"t": "text", "text": "real"}]
    assert m.state.stats.ignored_blocks["synthetic reply"] == 1


def test_usage_rides_on_the_last_content_envelope_of_the_record(m: Mapper) -> None:
    usage = {"input_tokens": 3, "output_tokens": 7}
    out = m.feed(assistant(text("a"), tool_use("toolu_x", "Bash", command="ls"), usage=usage), NOW)
    assert [e.usage for e in out] == [None, None, usage]


def test_null_usage_fields_are_omitted(m: Mapper) -> None:
    """`<synthetic>` replies carry `"service_tier": null` and more: omitted, never null (design §1)."""
    usage = {
        "input_tokens": 0,
        "output_tokens": 0,
        "service_tier": None,
        "speed": None,
        "cache_creation": {"a": 0},
    }
    out = m.feed(assistant(text("No response requested."), model="<synthetic>", usage=usage), NOW)
    assert out[-1].usage == {"input_tokens": 0, "output_tokens": 0, "cache_creation": {"a": 0}}
    assert b"null" not in out[-1].to_json()


def test_usage_is_carried_once_per_api_message(m: Mapper) -> None:
    usage = {"input_tokens": 3, "output_tokens": 7}
    first = assistant(thinking("t"), usage=usage)
    second = assistant(text("a"), usage=usage)
    third = assistant(text("b"), usage=usage)
    for r, message_id in ((first, "msg_1"), (second, "msg_1"), (third, "msg_2")):
        r.data["message"]["id"] = message_id
    out = feed_all(m, first, second, third)
    assert [e.usage for e in out if e.ev.t == "text"] == [usage, None, usage]


def test_background_subagent_outlives_the_turn_and_notification_stops_it(m: Mapper) -> None:
    launched = user(
        [tool_result("toolu_bg", "Async agent launched")],
        toolUseResult={"status": "async_launched", "agentId": "a1b2c3"},
    )
    out = feed_all(
        m,
        user("research this"),
        assistant(tool_use("toolu_bg", "Agent", description="Research", prompt="R")),
        launched,
        assistant(text("Started a background agent."), stop_reason="end_turn"),
        system("turn_duration"),
    )
    sid = subagent_id("toolu_bg")
    assert [e.ev.t for e in out][-2:] == ["text", "turn-end"]
    assert sid in {e.subagent for e in out} and m.state.active_subagents() == ["toolu_bg"]

    later = feed_all(
        m,
        assistant(text("found it"), sidechain=True, parent_tool_use_id="toolu_bg"),
        user(
            "<task-notification><task-id>a1b2c3</task-id><status>completed</status></task-notification>",
            origin={"kind": "task-notification"},
        ),
        assistant(text("The agent finished."), stop_reason="end_turn"),
        system("turn_duration"),
    )
    assert [(e.subagent, e.ev.t) for e in later] == [
        (None, "turn-start"),  # a new turn opens for the background subagent's output
        (sid, "text"),
        (sid, "stop"),
        (None, "text"),
        (None, "turn-end"),
    ]
    assert all(e.role == "agent" for e in later)  # the notification is not user text


def test_nothing_of_a_subagent_follows_its_stop(m: Mapper) -> None:
    out = feed_all(
        m,
        assistant(tool_use("toolu_t", "Task", prompt="p")),
        user([tool_result("toolu_t")]),
        assistant(text("late"), sidechain=True, parent_tool_use_id="toolu_t"),
    )
    assert [e.ev.t for e in out] == ["turn-start", "start", "stop"]
    assert m.state.stats.after_stop_dropped == 1


def test_close_turn_stops_active_subagents_first(m: Mapper) -> None:
    feed_all(
        m,
        assistant(tool_use("toolu_a", "Agent", prompt="a")),
        assistant(tool_use("toolu_b", "Task", prompt="b")),
    )
    out = m.close_turn("cancelled", NOW)
    assert [(e.subagent, e.ev.t) for e in out] == [
        (subagent_id("toolu_a"), "stop"),
        (subagent_id("toolu_b"), "stop"),
        (None, "turn-end"),
    ]
    assert m.close_turn("failed", NOW) == []


def test_close_turn_with_only_a_background_subagent_opens_a_turn_to_stop_it(m: Mapper) -> None:
    feed_all(m, assistant(tool_use("toolu_a", "Agent", prompt="a")), system("turn_duration"))
    out = m.close_turn("failed", NOW)
    assert [e.ev.t for e in out] == ["turn-start", "stop", "turn-end"]


@pytest.mark.parametrize(
    ("stop_reason", "status"), [("end_turn", "completed"), ("tool_use", "cancelled"), (None, "cancelled")]
)
def test_finish_closes_by_last_stop_reason(m: Mapper, stop_reason: str | None, status: str) -> None:
    m.feed(assistant(text("x"), stop_reason=stop_reason), NOW)
    assert evs(m.finish(NOW)) == [{"t": "turn-end", "status": status}]


def test_nested_subagents_get_their_own_ids(m: Mapper) -> None:
    out = feed_all(
        m,
        assistant(tool_use("toolu_outer", "Agent", prompt="outer")),
        assistant(
            tool_use("toolu_inner", "Agent", prompt="inner"), sidechain=True, parent_tool_use_id="toolu_outer"
        ),
        assistant(text("deep"), sidechain=True, parent_tool_use_id="toolu_inner"),
        user([tool_result("toolu_inner")], sidechain=True, parent_tool_use_id="toolu_outer"),
    )
    outer, inner = subagent_id("toolu_outer"), subagent_id("toolu_inner")
    assert [(e.subagent, e.ev.t) for e in out] == [
        (None, "turn-start"),
        (outer, "start"),
        (inner, "start"),
        (inner, "text"),
        (inner, "stop"),
    ]


def test_orphan_buffer_is_bounded_and_overflow_counted() -> None:
    m = Mapper(SequentialIds(), limits=OrphanLimits(max_records=2, max_bytes=10**9))
    for i in range(5):
        m.feed(assistant(text(f"o{i}"), parent_tool_use_id="toolu_never"), NOW)
    assert m.state.orphan_count == 2 and m.state.stats.orphans_dropped == 3
    m2 = Mapper(SequentialIds(), limits=OrphanLimits(max_records=100, max_bytes=10))
    m2.feed(make_record({"type": "assistant", "parent_tool_use_id": "t"}, size=11), NOW)
    assert m2.state.stats.orphans_dropped == 1


def test_subagent_ids_are_deterministic_cuid2_shaped() -> None:
    a, b = Mapper(SequentialIds()), Mapper(SequentialIds())
    r = assistant(tool_use("toolu_01ABC", "Agent", prompt="p"))
    assert a.feed(r, NOW)[1].subagent == b.feed(r, NOW)[1].subagent == subagent_id("toolu_01ABC")
    assert subagent_id("toolu_01ABC") != subagent_id("toolu_01ABD")


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_a_prompt_claude_never_answered_has_its_turn_closed_with_the_status(m: Mapper, status: Any) -> None:
    """Claude stopped before writing its first reply record: the prompt's turn is already open."""
    m.feed(user("hello"), NOW)
    assert evs(m.close_turn(status, NOW)) == [{"t": "turn-end", "status": status}]
    assert m.close_turn("failed", NOW) == []  # the prompt is settled


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (system("turn_duration"), "completed"),  # a turn that had no output
        (user("[Request interrupted by user]"), "cancelled"),  # interrupted before the first output
    ],
)
def test_a_prompt_answered_without_output_ends_its_turn_in_band(m: Mapper, answer: Any, status: str) -> None:
    out = feed_all(m, user("hello"), answer)
    assert evs(out)[1:] == [{"t": "turn-start"}, {"t": "turn-end", "status": status}]
    assert m.close_turn("failed", NOW) == []


@pytest.mark.parametrize(
    ("tail", "status"),
    [
        ([], "cancelled"),  # the last prompt got no reply: the previous turn's end_turn does not count
        ([assistant(text("partial"), stop_reason=None)], "cancelled"),
        ([assistant(text("done"), stop_reason="end_turn")], "completed"),
    ],
)
def test_finish_judges_the_open_turn_by_its_own_last_reply(m: Mapper, tail: list[Any], status: str) -> None:
    feed_all(m, user("q1"), assistant(text("a1"), stop_reason="end_turn"), user("q2"), *tail)
    assert evs(m.finish(NOW)) == [{"t": "turn-end", "status": status}]
