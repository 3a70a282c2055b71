"""The session-protocol envelope (seed 002, design §1) and the factory that makes envelopes.

`EnvelopeFactory` is how happy makes its own envelopes, once per transcript record on the hot
path: its typed methods can only express valid envelopes (ids from the id factory, the role
rules built in), so nothing is validated as they are made; the tests check that what it makes
passes the protocol's validating model (`protocol/wire.py`), which `parse_envelope` applies to
what is read from outside. An envelope is serialised once; the store and the events file share
the bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from happy_launcher.protocol.events import EVENT_TYPES, Event, ImageMeta, TextEv
from happy_launcher.protocol.ids import IdFactory

Role = Literal["user", "agent"]


@dataclass(frozen=True, kw_only=True)
class Envelope:
    """One message of the flat session stream."""

    id: str
    time: int
    role: Role
    turn: str | None = None
    subagent: str | None = None
    ev: Event
    # Tracing (design §1): the transcript record this came from, and the token usage of an
    # assistant record (on the last content envelope made from it).
    claudeUuid: str | None = None
    usage: dict[str, Any] | None = None
    # to_json()'s bytes, made once (None until then, so never part of them).
    _json: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def to_json(self) -> bytes:
        """Compact JSON, optional fields omitted (never null); made on the first call. The stdlib
        serialiser is the fallback for what orjson refuses (an integer beyond 64 bits in a
        tool's arguments)."""
        data = self._json
        if data is None:
            try:
                data = orjson.dumps(self, default=_fields, option=orjson.OPT_PASSTHROUGH_DATACLASS)
            except orjson.JSONEncodeError:
                data = json.dumps(self, default=_fields, ensure_ascii=False, separators=(",", ":")).encode()
            object.__setattr__(self, "_json", data)
        return data

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = orjson.loads(self.to_json())
        return result


def parse_envelope(data: bytes | str) -> Envelope:
    """An envelope read from outside (the store, a client), validated against the protocol;
    pydantic's ValidationError (a ValueError) says what is wrong."""
    from happy_launcher.protocol.wire import validated  # pydantic: only where envelopes are read back

    fields = validated(orjson.loads(data))
    ev = dict(fields.pop("ev"))
    if ev.get("image") is not None:
        ev["image"] = ImageMeta(**ev["image"])
    return Envelope(ev=EVENT_TYPES[ev["t"]](**ev), **fields)


def envelope_schema() -> dict[str, Any]:
    from happy_launcher.protocol.wire import envelope_schema as schema

    return schema()


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


def _fields(value: object) -> dict[str, Any]:
    """An envelope's or event's set fields, for the JSON serialisers (which come back here for
    the event inside an envelope)."""
    if not hasattr(value, "__dataclass_fields__"):
        raise TypeError(f"{type(value).__name__} is not JSON")  # orjson: JSONEncodeError
    return {name: item for name, item in value.__dict__.items() if item is not None}


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
    if time < 0:  # the one input a caller could get wrong (a record's timestamp before 1970)
        raise ValueError(f"envelope time {time} is negative")
    return Envelope(
        id=id_, time=time, role=role, turn=turn, subagent=subagent, ev=ev, claudeUuid=claude_uuid, usage=usage
    )
