"""The 9 session-protocol events (seed 002, design §1), discriminated by `t`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

TurnStatus = Literal["completed", "failed", "cancelled"]


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

# Lifecycle and service events only an agent can produce (design §1).
AGENT_ONLY_EVENTS = frozenset({"service", "start", "stop", "turn-start", "turn-end"})
