"""Property tests over random record sequences (hypothesis)."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.mapper_state import MapperState
from happy_launcher.claude.records import make_record
from happy_launcher.protocol import Envelope, SequentialIds, looks_like_cuid2, parse_envelope

TOOL_IDS = [f"toolu_{c}" for c in "abcdef"]
UUIDS = [f"00000000-0000-4000-8000-00000000000{i}" for i in range(8)]

texts = st.sampled_from(
    ["hi", "", "[Request interrupted by user]", "<command-name>/x</command-name>", "Find", "p"]
)
tool_names = st.sampled_from(["Bash", "Read", "Task", "Agent", "mcp__s__t"])
json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
junk = st.dictionaries(st.text(max_size=6), json_scalars, max_size=3)

blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(lambda t: {"type": "thinking", "thinking": t}, texts),
    st.builds(
        lambda i, n, p: {"type": "tool_use", "id": i, "name": n, "input": {"prompt": p, "command": "ls"}},
        st.sampled_from(TOOL_IDS),
        tool_names,
        texts,
    ),
    st.builds(
        lambda i, e: {"type": "tool_result", "tool_use_id": i, "content": "r", "is_error": e},
        st.sampled_from(TOOL_IDS),
        st.booleans(),
    ),
    junk,
)


@st.composite
def records(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["user", "assistant", "system", "summary", "attachment", "mystery"]))
    data: dict[str, Any] = {"type": kind}
    if draw(st.booleans()):
        data["uuid"] = draw(st.sampled_from(UUIDS))
    if draw(st.booleans()):
        data["parentUuid"] = draw(st.sampled_from([*UUIDS, None]))
    data["isSidechain"] = draw(st.booleans())
    if draw(st.booleans()):
        data["parent_tool_use_id"] = draw(st.sampled_from(TOOL_IDS))
    content = draw(st.one_of(texts, st.lists(blocks, max_size=4), json_scalars))
    data["message"] = {
        "role": kind,
        "content": content,
        "stop_reason": draw(st.sampled_from([None, "end_turn"])),
    }
    if kind == "system":
        data["subtype"] = draw(st.sampled_from(["turn_duration", "api_error", "x"]))
    if draw(st.integers(0, 9)) == 0:
        data["isApiErrorMessage"] = True
    if draw(st.integers(0, 9)) == 0:
        data["isCompactSummary"] = True
    if draw(st.booleans()) and isinstance(data["message"], dict):
        data["message"]["usage"] = {"output_tokens": 3, "service_tier": draw(st.none() | st.just("standard"))}
    if draw(st.integers(0, 9)) == 0:
        data["origin"] = {"kind": "task-notification"}
    if draw(st.integers(0, 9)) == 0:
        data["toolUseResult"] = {"status": "async_launched", "agentId": "ag1"}
    if draw(st.integers(0, 15)) == 0:
        data["message"] = draw(json_scalars)  # malformed message field
    return make_record(data, size=100)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(records(), max_size=40),
    st.sampled_from(["completed", "failed", "cancelled"]),
)
def test_mapper_invariants(seq: list[Any], status: Any) -> None:
    m = Mapper(SequentialIds())
    out: list[Envelope] = []
    for r in seq:
        batch = m.feed(r, 1)  # never raises
        if r.kind == "user" and r.data.get("isCompactSummary") is True:
            assert batch == []  # the /compact summary is not user input
        for i, e in enumerate(batch):
            if e.role == "user":  # a prompt: its turn is open from here on
                assert m.turn_open and batch[i + 1].ev.t == "turn-start"
        out += batch
    out += m.close_turn(status, 2)

    open_turn: str | None = None
    started: set[str] = set()
    stopped: set[str] = set()
    for e in out:
        # Every envelope re-validates from its own JSON; no provider id leaks into turn/subagent.
        assert parse_envelope(e.to_json()) == e
        assert e.usage is None or None not in e.usage.values()  # omitted, never null
        for value in (e.turn, e.subagent):
            assert value is None or (looks_like_cuid2(value) and not value.startswith("toolu"))
        if e.ev.t == "turn-start":
            assert open_turn is None
            open_turn = e.turn
        elif e.role == "agent":
            assert e.turn == open_turn  # agent events only inside their open turn
        if e.ev.t == "turn-end":
            open_turn = None
        if e.subagent is not None:
            assert e.subagent not in stopped  # nothing of a subagent follows its stop
            if e.ev.t == "start":
                assert e.subagent not in started
                started.add(e.subagent)
            else:
                assert e.subagent in started  # start comes first
            if e.ev.t == "stop":
                stopped.add(e.subagent)
    assert open_turn is None  # every turn-start matched by exactly one turn-end after close_turn
    assert started == stopped  # close_turn stops every active subagent


def _restored(mapper: Mapper) -> Mapper:
    """The mapper a restart builds from what the store saved of `mapper`'s state."""
    saved = orjson.loads(orjson.dumps(mapper.state.snapshot()))
    return Mapper(SequentialIds("restored"), MapperState.from_dict(saved))


def _storable(record: Any) -> bool:
    try:  # a transcript's integers fit in 64 bits (orjson reads larger ones as floats)
        orjson.dumps(record.data)
    except TypeError:
        return False
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records().filter(_storable), max_size=40))
def test_a_record_that_maps_to_nothing_maps_to_nothing_again_after_a_restart(seq: list[Any]) -> None:
    """The commit point holds the keys of such records for the next commit (session/commit.py):
    after a crash they are read again and mapped from the last saved state, which must lead to
    the same nothing and the same state as the first time."""
    m = Mapper(SequentialIds())
    for r in seq:
        before = _restored(m)
        if m.feed(r, 1):
            continue
        assert before.feed(r, 1) == []
        assert before.state.snapshot() == orjson.loads(orjson.dumps(m.state.snapshot()))
