"""The session-protocol envelope (seed 002, design §1) and the factory that makes envelopes.

Two ways in. `Envelope(...)` and `parse_envelope` validate: for anything read from outside (the
store, a client). `EnvelopeFactory` is how happy makes its own envelopes, once per transcript
record on the hot path: its typed methods can only express valid envelopes (ids from the id
factory, a validated event, the role rules built in), so it skips re-validating them (8-10 µs
each) and the tests check that what it makes validates (issue 7 §3). An envelope is serialised
once; the store and the events file share the bytes.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, NonNegativeInt, field_validator, model_validator

from happy_launcher.protocol.events import AGENT_ONLY_EVENTS, Event, TextEv
from happy_launcher.protocol.ids import IdFactory, looks_like_cuid2

Role = Literal["user", "agent"]


class Envelope(BaseModel):
    """One message of the flat session stream. Invalid envelopes cannot be constructed."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    __slots__ = ("_json",)  # to_json()'s bytes, made once (not a field: not compared or copied)

    id: str
    time: NonNegativeInt
    role: Role
    turn: str | None = None
    subagent: str | None = None
    ev: Event
    # Tracing (design §1): the transcript record this came from, and the token usage of an
    # assistant record (on the last content envelope made from it).
    claudeUuid: str | None = None
    usage: dict[str, Any] | None = None

    @field_validator("id", "turn", "subagent")
    @classmethod
    def _cuid2(cls, value: str | None) -> str | None:
        # Provider ids (`toolu_…`, Claude's uuids) fail this: they must never leak here.
        if value is not None and not looks_like_cuid2(value):
            raise ValueError(f"{value!r} is not a cuid2 id")
        return value

    @model_validator(mode="after")
    def _role_rules(self) -> Envelope:
        if self.role == "agent" and self.turn is None:
            raise ValueError("agent envelopes need a turn")
        if self.role == "user" and self.ev.t in AGENT_ONLY_EVENTS:
            raise ValueError(f"{self.ev.t!r} is an agent-only event")
        return self

    def to_json(self) -> bytes:
        """Compact JSON, optional fields omitted (never null); made on the first call. orjson
        over the fields costs about half of pydantic's serializer; pydantic's is the fallback
        for what orjson refuses (an integer beyond 64 bits in a tool's arguments)."""
        data: bytes | None = getattr(self, "_json", None)
        if data is None:
            try:
                data = orjson.dumps(_fields(self), default=_fields)
            except orjson.JSONEncodeError:
                data = self.__pydantic_serializer__.to_json(self, exclude_none=True)
            _set(self, "_json", data)
        return data

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def envelope_schema() -> dict[str, Any]:
    return Envelope.model_json_schema()


def parse_envelope(data: bytes | str) -> Envelope:
    return Envelope.model_validate(orjson.loads(data))


class EnvelopeFactory:
    """Makes envelopes with injected ids; the caller supplies the time (record time or a clock)."""

    def __init__(self, ids: IdFactory) -> None:
        self.new_id = ids

    def user_text(self, text: str, time: int, *, claude_uuid: str | None = None) -> Envelope:
        return _made(self.new_id(), time, "user", None, None, TextEv(text=text), claude_uuid, None)

    def agent(
        self,
        ev: Event,
        *,
        turn: str,
        time: int,
        subagent: str | None = None,
        claude_uuid: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> Envelope:
        return _made(self.new_id(), time, "agent", turn, subagent, ev, claude_uuid, usage)

    def with_usage(self, envelope: Envelope, usage: dict[str, Any]) -> Envelope:
        """The same envelope carrying `usage` (a new object: envelopes are immutable)."""
        return _made(
            envelope.id,
            envelope.time,
            envelope.role,
            envelope.turn,
            envelope.subagent,
            envelope.ev,
            envelope.claudeUuid,
            usage,
        )


_set = object.__setattr__


def _fields(model: object) -> dict[str, Any]:
    """A model's set fields, for orjson (nested models come back here through `default`)."""
    if not isinstance(model, BaseModel):
        raise TypeError(f"{type(model).__name__} is not JSON")  # orjson: JSONEncodeError
    return {name: value for name, value in model.__dict__.items() if value is not None}


_FIELDS = frozenset(Envelope.model_fields)


def _made(
    id_: str,
    time: int,
    role: Role,
    turn: str | None,
    subagent: str | None,
    ev: Event,
    claude_uuid: str | None,
    usage: dict[str, Any] | None,
) -> Envelope:
    """An envelope from parts that are valid by construction (see the module docstring), set up
    the way pydantic's own `model_construct` does, minus its per-field loop."""
    if time < 0:  # the one input a caller could get wrong (a record's timestamp before 1970)
        raise ValueError(f"envelope time {time} is negative")
    env = Envelope.__new__(Envelope)
    fields = {
        "id": id_,
        "time": time,
        "role": role,
        "turn": turn,
        "subagent": subagent,
        "ev": ev,
        "claudeUuid": claude_uuid,
        "usage": usage,
    }
    _set(env, "__dict__", fields)
    _set(env, "__pydantic_fields_set__", set(_FIELDS))  # as if all were passed (they are)
    _set(env, "__pydantic_extra__", None)
    _set(env, "__pydantic_private__", None)
    _set(env, "_json", None)
    return env
