"""Envelopes and events: field rules of seed 002 and design §1, as the validating wire model
checks them, and the plain classes happy makes envelopes with, which must agree with it."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from happy_launcher.protocol import (
    Cuid2Ids,
    Envelope,
    EnvelopeFactory,
    ImageMeta,
    SequentialIds,
    TextEv,
    ToolCallStartEv,
    envelope_schema,
    looks_like_cuid2,
    parse_envelope,
    wire,
)
from happy_launcher.protocol.events import EVENT_TYPES

CUID = "ckv9l0m1n2o3p4q5r6s7t8u9"


def env(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": CUID,
        "time": 1,
        "role": "agent",
        "turn": CUID,
        "ev": {"t": "text", "text": "x"},
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def parse(data: dict[str, Any]) -> Envelope:
    return parse_envelope(orjson.dumps(data))


EVENTS: list[dict[str, Any]] = [
    {"t": "text", "text": "hi"},
    {"t": "text", "text": "hm", "thinking": True},
    {"t": "service", "text": "**Service**"},
    {
        "t": "tool-call-start",
        "call": "toolu_1",
        "name": "Bash",
        "title": "t",
        "description": "d",
        "args": {},
    },
    {"t": "tool-call-end", "call": "toolu_1"},
    {
        "t": "file",
        "ref": "up_1",
        "name": "a.png",
        "size": 3,
        "image": {"width": 1, "height": 2, "thumbhash": "x"},
    },
    {"t": "turn-start"},
    {"t": "turn-end", "status": "cancelled"},
    {"t": "start", "title": "Research"},
    {"t": "start"},
    {"t": "stop"},
]


@pytest.mark.parametrize("ev", EVENTS)
def test_all_nine_events_validate_and_round_trip(ev: dict[str, Any]) -> None:
    e = parse(env(ev=ev, subagent=CUID))
    assert parse_envelope(e.to_json()) == e
    assert e.to_dict()["ev"] == ev


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"ev": {"t": "turn-end", "status": "canceled"}}, "status"),
        ({"subagent": "toolu_01ABCdef"}, "cuid2"),
        ({"subagent": "0b0c2a1e-1111-4222-8333-444455556666"}, "cuid2"),
        ({"turn": "toolu_x"}, "cuid2"),
        ({"id": "Not-A-Cuid"}, "cuid2"),
        ({"turn": None}, "need a turn"),
        ({"role": "user", "turn": None, "ev": {"t": "turn-start"}}, "agent-only"),
        ({"role": "user", "turn": None, "ev": {"t": "service", "text": "x"}}, "agent-only"),
        ({"role": "user", "turn": None, "ev": {"t": "stop"}}, "agent-only"),
        ({"role": "system"}, "role"),
        ({"ev": {"t": "text", "text": "x", "extra": 1}}, "extra"),
        ({"ev": {"t": "bogus"}}, "bogus"),
        ({"time": -1}, "time"),
        ({"unexpected": True}, "unexpected"),
    ],
)
def test_invalid_envelopes_are_rejected(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse(env(**overrides))


def test_envelopes_are_frozen() -> None:
    e = parse(env())
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(e, "time", 5)  # noqa: B010 - assigning to a frozen envelope must fail
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(e.ev, "text", "y")  # noqa: B010 - and to its event


def test_user_envelope_needs_no_turn() -> None:
    e = parse(env(role="user", turn=None))
    assert "turn" not in e.to_dict()


def test_factory_uses_injected_ids_and_time() -> None:
    make = EnvelopeFactory(SequentialIds("x"))
    e = make.agent(TextEv(text="a"), turn="tturn", time=42, claude_uuid="u-1", usage={"output_tokens": 1})
    assert (e.id, e.time, e.turn, e.claudeUuid) == ("x00000000000000000000001", 42, "tturn", "u-1")
    assert make.user_text("q", 7).to_dict() == {
        "id": "x00000000000000000000002",
        "time": 7,
        "role": "user",
        "ev": {"t": "text", "text": "q"},
    }


@pytest.mark.parametrize("ev", EVENTS)
def test_envelopes_the_factory_makes_validate(ev: dict[str, Any]) -> None:
    """The factory skips validation (the hot path): what it makes must still be valid."""
    make = EnvelopeFactory(Cuid2Ids())
    event = parse(env(ev=ev)).ev
    made = [
        make.agent(event, turn=CUID, time=3),
        make.agent(event, turn=CUID, time=3, subagent=CUID, claude_uuid="u-1", usage={"output_tokens": 2}),
        make.with_usage(make.agent(event, turn=CUID, time=0), {"input_tokens": 1, "tier": None}),
        make.user_text("a prompt", 5, claude_uuid="u-2"),
    ]
    for e in made:
        again = parse_envelope(e.to_json())
        assert again == e
        assert again.to_json() == e.to_json()
        assert parse(e.to_dict()).to_dict() == e.to_dict()


@pytest.mark.parametrize("cls", [Envelope, ImageMeta, *EVENT_TYPES.values()], ids=lambda c: c.__name__)
def test_the_plain_classes_have_the_fields_of_the_wire_model(cls: type[Any]) -> None:
    """Same names, order, required fields and defaults: what happy makes, the model describes."""
    model = getattr(wire, cls.__name__)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    assert [f.name for f in fields] == list(model.model_fields)
    for f in fields:
        spec = model.model_fields[f.name]
        assert (f.default is dataclasses.MISSING) == spec.is_required(), f.name
        if not spec.is_required():
            assert f.default == spec.default, f.name


def test_every_event_type_is_in_the_wire_union() -> None:
    union = wire.Envelope.model_fields["ev"].annotation
    assert {m.__name__ for m in typing.get_args(union)} == {c.__name__ for c in EVENT_TYPES.values()}


def test_an_envelope_is_serialised_once() -> None:
    e = EnvelopeFactory(Cuid2Ids()).agent(TextEv(text="a"), turn=CUID, time=1)
    assert e.to_json() is e.to_json()  # the store and the events file share the bytes


def test_json_beyond_what_orjson_takes_falls_back_to_the_stdlib() -> None:
    args = {"n": 2**70, "none": None}  # None inside arguments stays: only fields are omitted
    ev = ToolCallStartEv(call="c", name="n", title="t", description="d", args=args)
    e = EnvelopeFactory(Cuid2Ids()).agent(ev, turn=CUID, time=1)
    assert parse_envelope(e.to_json()) == e
    assert b'"n":1180591620717411303424,"none":null' in e.to_json()


def test_the_factory_refuses_a_time_before_1970() -> None:
    with pytest.raises(ValueError, match="negative"):
        EnvelopeFactory(Cuid2Ids()).agent(TextEv(text="a"), turn=CUID, time=-1)


def test_cuid2_ids_are_unique_and_valid() -> None:
    ids = Cuid2Ids()
    made = {ids() for _ in range(20_000)}
    assert len(made) == 20_000
    assert all(looks_like_cuid2(i) and len(i) == 24 for i in made)


def test_schema_describes_the_envelope() -> None:
    schema = envelope_schema()
    assert set(schema["required"]) == {"id", "time", "role", "ev"}
    assert schema["additionalProperties"] is False
    assert len(schema["properties"]["ev"]["oneOf"]) == 9


@given(st.text(alphabet="abcxyz019-_A ", max_size=40))
def test_id_shape_agrees_with_the_reference_cuid2(value: str) -> None:
    from cuid2 import is_cuid

    assert looks_like_cuid2(value) == is_cuid(value, min_length=2, max_length=32)
