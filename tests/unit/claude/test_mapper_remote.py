"""The mapper's remote-mode API (design §4): prompts the SDK does not echo, turn results, and the
synthetic subagent root of the SDK converter, each shown exactly once."""

from __future__ import annotations

from typing import Any

import pytest

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.mapper_state import MAX_SENT_PROMPTS, MapperState
from happy_launcher.claude.records import SYNTHETIC, SYNTHETIC_SUBAGENT_PROMPT
from happy_launcher.protocol import Envelope, SequentialIds
from tests.support.records import assistant, rec, text, tool_result, tool_use, user

NOW = 7


def evs(envelopes: list[Envelope]) -> list[tuple[str, dict[str, Any]]]:
    return [(e.role, e.to_dict()["ev"]) for e in envelopes]


@pytest.fixture
def m() -> Mapper:
    return Mapper(SequentialIds())


def test_prompt_sent_shows_the_text_and_starts_the_turn_at_once(m: Mapper) -> None:
    out = m.prompt_sent("hello", NOW)
    assert evs(out) == [("user", {"t": "text", "text": "hello"}), ("agent", {"t": "turn-start"})]
    assert out[1].turn == m.state.turn and out[0].time == NOW
    assert "claudeUuid" not in out[0].to_dict()


def test_the_transcript_copy_of_a_sent_prompt_maps_to_nothing_once(m: Mapper) -> None:
    m.prompt_sent("hello", NOW)
    turn = m.state.turn
    assert m.feed(user("hello"), NOW) == []
    assert m.state.turn == turn  # no second turn-start
    reply = m.feed(assistant(text("Hi")), NOW)
    assert [e.turn for e in reply] == [turn]
    # The same text typed later (the TUI, after a switch) is a new prompt again.
    assert evs(m.feed(user("hello"), NOW))[:2] == [
        ("agent", {"t": "turn-end", "status": "completed"}),
        ("user", {"t": "text", "text": "hello"}),
    ]


def test_prompt_sent_ends_the_open_turn_completed_first(m: Mapper) -> None:
    first = m.prompt_sent("one", NOW)
    out = m.prompt_sent("two", NOW)
    assert evs(out)[0] == ("agent", {"t": "turn-end", "status": "completed"})
    assert out[0].turn == first[1].turn and out[2].turn != first[1].turn


def test_copies_come_in_order_and_a_lost_copy_is_forgotten(m: Mapper) -> None:
    m.prompt_sent("one", NOW)
    m.prompt_sent("two", NOW)
    assert m.feed(user("two"), NOW) == []  # "one"'s copy never came: forgotten with it
    assert m.state.sent_prompts == []
    assert evs(m.feed(user("one"), NOW))[1] == ("user", {"t": "text", "text": "one"})


def test_sent_prompts_are_bounded_and_survive_a_restart(m: Mapper) -> None:
    for i in range(MAX_SENT_PROMPTS + 3):
        m.prompt_sent(f"p{i}", NOW)
    assert len(m.state.sent_prompts) == MAX_SENT_PROMPTS
    again = Mapper(SequentialIds(), MapperState.from_dict(m.state.to_dict()))
    assert again.feed(user(f"p{MAX_SENT_PROMPTS + 2}"), NOW) == []


def test_an_empty_prompt_starts_a_turn_without_user_text(m: Mapper) -> None:
    assert evs(m.prompt_sent("", NOW)) == [("agent", {"t": "turn-start"})]
    assert m.state.sent_prompts == []


@pytest.mark.parametrize("status", ["completed", "cancelled"])
def test_end_turn_ends_the_open_turn(m: Mapper, status: Any) -> None:
    m.prompt_sent("go", NOW)
    assert evs(m.end_turn(status, NOW, "ignored unless failed")) == [
        ("agent", {"t": "turn-end", "status": status})
    ]
    assert m.end_turn(status, NOW) == []  # nothing open: nothing more


def test_a_failed_result_says_why_once(m: Mapper) -> None:
    m.prompt_sent("go", NOW)
    assert evs(m.end_turn("failed", NOW, "Claude stopped: max turns")) == [
        ("agent", {"t": "service", "text": "Claude stopped: max turns"}),
        ("agent", {"t": "turn-end", "status": "failed"}),
    ]


def test_a_result_after_the_api_error_record_adds_nothing(m: Mapper) -> None:
    m.prompt_sent("go", NOW)
    error = assistant(text("API Error: 529"), isApiErrorMessage=True, model="<synthetic>")
    assert [e.ev.t for e in m.feed(error, NOW)] == ["service", "turn-end"]
    assert m.end_turn("failed", NOW, "API Error: 529") == []


def test_end_turn_leaves_background_subagents_running(m: Mapper) -> None:
    m.prompt_sent("go", NOW)
    m.feed(assistant(tool_use("toolu_A", "Agent", prompt="sub task", description="Sub")), NOW)
    m.end_turn("completed", NOW)
    tagged = rec(assistant(text("still working")).data, parent_tool_use_id="toolu_A")
    assert evs(m.feed(tagged, NOW)) == [
        ("agent", {"t": "turn-start"}),
        ("agent", {"t": "text", "text": "still working"}),
    ]


def _synthetic_root(tool_id: str, prompt: str) -> Any:
    data = {
        "type": "user",
        "isSidechain": True,
        "message": {"role": "user", "content": prompt},
        SYNTHETIC: SYNTHETIC_SUBAGENT_PROMPT,
    }
    return rec(data, parent_tool_use_id=tool_id)


def test_the_synthetic_subagent_root_shows_the_prompt_and_its_transcript_copy_nothing(m: Mapper) -> None:
    m.prompt_sent("go", NOW)
    m.feed(assistant(tool_use("toolu_A", "Agent", prompt="sub task", description="Sub")), NOW)
    shown = m.feed(_synthetic_root("toolu_A", "sub task"), NOW)
    assert evs(shown) == [("agent", {"t": "text", "text": "sub task"})]
    copy = rec(user("sub task", sidechain=True).data, parent_tool_use_id="toolu_A")
    assert m.feed(copy, NOW) == []
    # A later message with the same text to that subagent is shown again.
    again = rec(user("sub task", sidechain=True).data, parent_tool_use_id="toolu_A")
    assert evs(m.feed(again, NOW)) == [("agent", {"t": "text", "text": "sub task"})]


def test_a_real_root_shows_its_prompt_and_sets_no_echo(m: Mapper) -> None:
    m.prompt_sent("go", NOW)
    m.feed(assistant(tool_use("toolu_A", "Agent", prompt="sub task")), NOW)
    root = rec(user("sub task", sidechain=True).data, parent_tool_use_id="toolu_A")
    assert len(m.feed(root, NOW)) == 1
    assert m.state.subagents["toolu_A"].prompt_echo is False
    result = rec(user([tool_result("toolu_A")]).data)
    assert [e.ev.t for e in m.feed(result, NOW)] == ["stop"]


def test_a_subagent_at_work_after_the_main_reply_ended_its_turn_opens_the_next(m: Mapper) -> None:
    """A transcript written through the SDK has no turn_duration: a background agent's records
    after the main chain's end_turn reply belong to the next turn, as the SDK's result says."""
    m.feed(user("go"), NOW)
    m.feed(assistant(tool_use("toolu_A", "Agent", prompt="sub task")), NOW)
    first = m.state.turn
    m.feed(assistant(text("On it."), stop_reason="end_turn"), NOW)
    sub = rec(assistant(text("working")).data, parent_tool_use_id="toolu_A")
    out = m.feed(sub, NOW)
    assert evs(out) == [
        ("agent", {"t": "turn-end", "status": "completed"}),
        ("agent", {"t": "turn-start"}),
        ("agent", {"t": "text", "text": "working"}),
    ]
    assert out[0].turn == first and out[1].turn != first


def test_a_subagent_at_work_during_its_parents_tool_call_stays_in_the_turn(m: Mapper) -> None:
    m.feed(user("go"), NOW)
    m.feed(assistant(tool_use("toolu_A", "Agent", prompt="sub task"), stop_reason="tool_use"), NOW)
    sub = rec(assistant(text("working")).data, parent_tool_use_id="toolu_A")
    assert evs(m.feed(sub, NOW)) == [("agent", {"t": "text", "text": "working"})]


def test_a_background_turns_result_does_not_end_a_prompts_turn_it_did_not_take_in(m: Mapper) -> None:
    m.prompt_sent("first", NOW, uuid="p1")
    m.end_turn("completed", NOW)
    m.feed(rec(assistant(text("agent done")).data, parent_tool_use_id="toolu_X"), NOW)  # an orphan: held
    m.prompt_sent("second", NOW, uuid="p2")
    turn = m.state.turn
    assert m.end_turn("completed", NOW, taken=()) == []  # the notification's turn, not p2's
    assert m.state.turn == turn
    assert [e.ev.t for e in m.end_turn("completed", NOW, taken=("p2",))] == ["turn-end"]


def test_a_background_turns_result_ends_a_turn_no_prompt_began(m: Mapper) -> None:
    m.prompt_sent("go", NOW, uuid="p1")
    m.feed(assistant(tool_use("toolu_A", "Agent", prompt="sub task")), NOW)
    m.end_turn("completed", NOW)
    m.feed(rec(assistant(text("working")).data, parent_tool_use_id="toolu_A"), NOW)  # opens a turn
    assert [e.ev.t for e in m.end_turn("completed", NOW, taken=())] == ["turn-end"]
    # A prompt sent without a uuid cannot be told apart: the result ends its turn.
    m.prompt_sent("plain", NOW)
    assert [e.ev.t for e in m.end_turn("completed", NOW, taken=())] == ["turn-end"]
