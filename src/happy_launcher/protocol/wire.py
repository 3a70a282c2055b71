"""The envelope as a validating pydantic model: the protocol's rules (seed 002, design §1) for
what comes from outside, and the JSON schema (`happy protocol schema`).

Loaded only by what reads envelopes back or exports the schema: the classes happy works with
(`protocol/events.py`, `protocol/envelope.py`) are plain dataclasses, and the tests check that
every envelope they make passes this model. The class names are the schema's titles.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, field_validator, model_validator

from happy_launcher.protocol.events import AGENT_ONLY_EVENTS, ToolStatus, TurnStatus
from happy_launcher.protocol.ids import looks_like_cuid2


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TextEv(_Event):
    t: Literal["text"] = "text"
    text: str
    thinking: bool | None = None


class ServiceEv(_Event):
    t: Literal["service"] = "service"
    text: str


class ToolCallStartEv(_Event):
    t: Literal["tool-call-start"] = "tool-call-start"
    call: str = Field(min_length=1)
    name: str = Field(min_length=1)
    title: str
    description: str
    args: dict[str, Any]


class ToolCallEndEv(_Event):
    t: Literal["tool-call-end"] = "tool-call-end"
    call: str = Field(min_length=1)
    # Ours, optional (Happy's schema strips unknown event fields): a call that did not succeed.
    status: ToolStatus | None = None


class ImageMeta(_Event):
    width: NonNegativeInt
    height: NonNegativeInt
    thumbhash: str


class FileEv(_Event):
    t: Literal["file"] = "file"
    ref: str = Field(min_length=1)
    name: str
    size: NonNegativeInt
    image: ImageMeta | None = None


class TurnStartEv(_Event):
    t: Literal["turn-start"] = "turn-start"


class TurnEndEv(_Event):
    t: Literal["turn-end"] = "turn-end"
    status: TurnStatus


class StartEv(_Event):
    t: Literal["start"] = "start"
    title: str | None = None


class StopEv(_Event):
    t: Literal["stop"] = "stop"


Event = Annotated[
    TextEv
    | ServiceEv
    | ToolCallStartEv
    | ToolCallEndEv
    | FileEv
    | TurnStartEv
    | TurnEndEv
    | StartEv
    | StopEv,
    Field(discriminator="t"),
]


class Envelope(BaseModel):
    """One message of the flat session stream. Invalid envelopes cannot be constructed."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    time: NonNegativeInt
    role: Literal["user", "agent"]
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


def validated(data: Any) -> dict[str, Any]:
    """`data` (decoded JSON) checked against the protocol, as plain data with the defaults filled
    in; raises pydantic's ValidationError (a ValueError) saying what is wrong."""
    return Envelope.model_validate(data).model_dump()


def envelope_schema() -> dict[str, Any]:
    return Envelope.model_json_schema()
