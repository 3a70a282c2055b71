"""The 9 session-protocol events (seed 002, design §1), discriminated by `t`.

Plain frozen dataclasses, not validating models: happy makes one per transcript record on the
hot path, and the mirror of a running Claude must load fast (pydantic alone took ~0.15 s of CPU,
beside Claude). Their fields can only express what the protocol allows but for a few values
(the tests check every envelope happy makes against `protocol/wire.py`'s models, which
validate what is read from outside and give the JSON schema).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

TurnStatus = Literal["completed", "failed", "cancelled"]
# How a tool call ended when it did not succeed (an optional field of ours, docs/decisions.md;
# omitted for a call that succeeded).
ToolStatus = Literal["failed", "denied", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class TextEv:
    t: Literal["text"] = "text"
    text: str
    thinking: bool | None = None


@dataclass(frozen=True, kw_only=True)
class ServiceEv:
    t: Literal["service"] = "service"
    text: str


@dataclass(frozen=True, kw_only=True)
class ToolCallStartEv:
    t: Literal["tool-call-start"] = "tool-call-start"
    call: str
    name: str
    title: str
    description: str
    args: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolCallEndEv:
    t: Literal["tool-call-end"] = "tool-call-end"
    call: str
    status: ToolStatus | None = None


@dataclass(frozen=True, kw_only=True)
class ImageMeta:
    width: int
    height: int
    thumbhash: str


@dataclass(frozen=True, kw_only=True)
class FileEv:
    t: Literal["file"] = "file"
    ref: str
    name: str
    size: int
    image: ImageMeta | None = None


@dataclass(frozen=True, kw_only=True)
class TurnStartEv:
    t: Literal["turn-start"] = "turn-start"


@dataclass(frozen=True, kw_only=True)
class TurnEndEv:
    t: Literal["turn-end"] = "turn-end"
    status: TurnStatus


@dataclass(frozen=True, kw_only=True)
class StartEv:
    t: Literal["start"] = "start"
    title: str | None = None


@dataclass(frozen=True, kw_only=True)
class StopEv:
    t: Literal["stop"] = "stop"


Event = (
    TextEv | ServiceEv | ToolCallStartEv | ToolCallEndEv | FileEv | TurnStartEv | TurnEndEv | StartEv | StopEv
)

# By `t`: what a validated envelope read back is rebuilt with.
EVENT_TYPES: dict[str, type[Event]] = {
    cls.t: cls
    for cls in (
        TextEv,
        ServiceEv,
        ToolCallStartEv,
        ToolCallEndEv,
        FileEv,
        TurnStartEv,
        TurnEndEv,
        StartEv,
        StopEv,
    )
}

# Lifecycle and service events only an agent can produce (design §1).
AGENT_ONLY_EVENTS = frozenset({"service", "start", "stop", "turn-start", "turn-end"})
