"""The session-protocol envelope (seed 002, design §1) and the factory that makes envelopes."""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, NonNegativeInt, field_validator, model_validator

from happy_launcher.protocol.events import AGENT_ONLY_EVENTS, Event, TextEv
from happy_launcher.protocol.ids import IdFactory, looks_like_cuid2

Role = Literal["user", "agent"]


class Envelope(BaseModel):
    """One message of the flat session stream. Invalid envelopes cannot be constructed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
        """Compact JSON, optional fields omitted (never null)."""
        return self.__pydantic_serializer__.to_json(self, exclude_none=True)

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
        ev = TextEv(text=text)
        return Envelope(id=self.new_id(), time=time, role="user", ev=ev, claudeUuid=claude_uuid)

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
        return Envelope(
            id=self.new_id(),
            time=time,
            role="agent",
            turn=turn,
            subagent=subagent,
            ev=ev,
            claudeUuid=claude_uuid,
            usage=usage,
        )
