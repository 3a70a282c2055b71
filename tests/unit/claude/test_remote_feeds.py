"""Remote mode's key invariant (design §4), sans-IO, on streams recorded from the real CLI
(tests/fixtures/sdk, made by scripts/gen_sdk_fixtures.py): the SDK stream through converter ->
queue -> mirror, merged with the transcript that run wrote (first copy of a record wins), in any
arrival order, gives the envelopes a replay of that transcript gives, up to ids and times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from happy_launcher.claude.converter import Converter
from happy_launcher.claude.sdk_items import TurnResult
from happy_launcher.protocol import Envelope, subagent_id
from tests.support.remote_feed import (
    ORDERS,
    Order,
    envelope_view,
    merged,
    replayed,
    run_live,
    sdk_groups,
    transcript_records,
)
from tests.support.sdk_stream import FIXTURES, Prompt, load_stream, scenario_dir, scenario_names

SCENARIOS = scenario_names()
SUBAGENT_PROMPT = "SUBAGENT-TASK: run `echo from-subagent` with Bash and report what it printed."
# One-block replies only: their usage is final when the SDK yields them (see claude/converter.py).
EXACT_USAGE = {"text", "two_turns", "api_error", "interrupted"}
_TOKENS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def live(scenario: Path, order: Order, *, with_uuids: bool = True) -> list[Envelope]:
    converter = Converter()
    groups = list(sdk_groups(scenario, converter, with_uuids=with_uuids))
    envelopes, skipped = run_live(merged(groups, transcript_records(scenario), order))
    assert converter.stats.unknown_messages == {} and converter.stats.unknown_blocks == {}
    assert skipped > 0  # both feeds brought copies: the second was skipped
    return envelopes


def _without_uuid(view: list[dict[str, Any]], predicate: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in i.items() if k != "claudeUuid"} if predicate(i) else i for i in view]


def test_every_scenario_was_recorded() -> None:
    assert set(SCENARIOS) == {
        "text",
        "bash_tool",
        "thinking",
        "agent_foreground",
        "agent_background",
        "api_error",
        "interrupted",
        "tool_interrupted",
        "two_turns",
    }
    assert (FIXTURES / "VERSION").read_text().strip()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", SCENARIOS)
def test_live_feeds_give_the_replay_of_the_transcript(name: str, order: Order) -> None:
    scenario = scenario_dir(name)
    expected, got = envelope_view(replayed(scenario)), envelope_view(live(scenario, order))
    if name == "agent_background" and order != "transcript_first":
        # The SDK never sends a background agent's prompt: the converter's synthetic root shows
        # it at once, without the uuid of the transcript's root (which then shows nothing).
        prompt = [item for item in got if item["ev"] == {"t": "text", "text": SUBAGENT_PROMPT}]
        assert len(prompt) == 1 and "claudeUuid" not in prompt[0]
        expected = _without_uuid(expected, lambda item: item["ev"].get("text") == SUBAGENT_PROMPT)
    assert got == expected


@pytest.mark.parametrize("name", SCENARIOS)
def test_prompts_sent_without_a_uuid_are_shown_once_too(name: str) -> None:
    scenario = scenario_dir(name)
    expected = envelope_view(replayed(scenario))
    got = envelope_view(live(scenario, "sdk_first", with_uuids=False))

    def user(item: dict[str, Any]) -> bool:
        return bool(item["role"] == "user")

    assert [item for item in got if user(item)] == _without_uuid([i for i in expected if user(i)], user)
    assert [item for item in got if not user(item)] == [i for i in expected if not user(i)] or (
        name == "agent_background"  # the synthetic root, as above
    )


@pytest.mark.parametrize("name", SCENARIOS)
def test_usage_rides_on_the_same_envelopes(name: str) -> None:
    scenario = scenario_dir(name)
    expected, got = replayed(scenario), live(scenario, "sdk_first")
    assert [e.usage is not None for e in got] == [e.usage is not None for e in expected]
    for want, have in zip(expected, got, strict=True):
        if want.usage is None or have.usage is None:
            continue
        assert {k: have.usage.get(k) for k in _TOKENS} == {k: want.usage.get(k) for k in _TOKENS}
        # The SDK yields a block before its reply ends: output tokens so far, final for a
        # one-block reply (its message_delta comes before anything else is released).
        assert 1 <= have.usage["output_tokens"] <= want.usage["output_tokens"]
        if name in EXACT_USAGE:
            assert have.usage["output_tokens"] == want.usage["output_tokens"]


def test_subagent_ids_match_the_replay() -> None:
    for name in ("agent_foreground", "agent_background"):
        scenario = scenario_dir(name)
        agent_calls = {
            block.id
            for message in load_stream(scenario / "stream.jsonl")
            for block in getattr(message, "content", None) or []
            if getattr(block, "name", None) == "Agent"
        }
        assert len(agent_calls) == 1
        want = {e.subagent for e in replayed(scenario) if e.subagent}
        for order in ORDERS:
            assert (
                {e.subagent for e in live(scenario, order) if e.subagent}
                == want
                == {subagent_id(call) for call in agent_calls}
            )


def test_the_recorded_turn_results() -> None:
    def results(name: str) -> list[TurnResult]:
        groups = sdk_groups(scenario_dir(name), Converter())
        return [item for group in groups for item in group if isinstance(item, TurnResult)]

    assert [r.status for r in results("agent_background")] == ["completed", "completed"]
    assert [(r.status, r.reason) for r in results("interrupted")] == [
        ("cancelled", "aborted_streaming"),
        ("completed", "completed"),
    ]
    assert [(r.status, r.reason) for r in results("tool_interrupted")] == [
        ("cancelled", "aborted_tools"),
        ("completed", "completed"),
    ]
    failed = results("api_error")[0]
    assert failed.status == "failed" and failed.reason == "api_error"
    assert failed.service is not None and failed.service.startswith("API Error: 529")


def test_a_background_agents_second_result_is_not_a_new_user_turn() -> None:
    envelopes = live(scenario_dir("agent_background"), "sdk_first")
    users = [e for e in envelopes if e.role == "user"]
    assert [e.to_dict()["ev"] for e in users] == [{"t": "text", "text": "Delegate the echo to a subagent"}]
    starts = [e.turn for e in envelopes if e.ev.t == "turn-start"]
    ends = [e.turn for e in envelopes if e.ev.t == "turn-end"]
    assert len(starts) == 2 and starts == ends  # the agent's work opened the second turn


def test_the_loader_rebuilds_the_sdk_objects() -> None:
    import claude_agent_sdk

    stream = load_stream(scenario_dir("bash_tool") / "stream.jsonl")
    kinds = {type(m).__name__ for m in stream}
    assert {"Prompt", "AssistantMessage", "UserMessage", "ResultMessage", "StreamEvent"} <= kinds
    call = next(m for m in stream if isinstance(m, claude_agent_sdk.AssistantMessage) and m.uuid)
    assert isinstance(call.content[0], claude_agent_sdk.TextBlock)
    prompts = [m for m in stream if isinstance(m, Prompt)]
    assert len(prompts) == 1 and prompts[0].text == "Run echo hello" and prompts[0].uuid
