"""The session protocol: envelopes, the 9 events, ids. Imports nothing else of ours, and no
validation library: `protocol/wire.py` (pydantic) is loaded only where envelopes are read back."""

from happy_launcher.protocol.envelope import Envelope, EnvelopeFactory, envelope_schema, parse_envelope
from happy_launcher.protocol.events import (
    AGENT_ONLY_EVENTS,
    Event,
    FileEv,
    ImageMeta,
    ServiceEv,
    StartEv,
    StopEv,
    TextEv,
    ToolCallEndEv,
    ToolCallStartEv,
    ToolStatus,
    TurnEndEv,
    TurnStartEv,
    TurnStatus,
)
from happy_launcher.protocol.ids import (
    Clock,
    Cuid2Ids,
    IdFactory,
    SequentialIds,
    looks_like_cuid2,
    subagent_id,
    wall_clock_ms,
)

__all__ = [
    "AGENT_ONLY_EVENTS",
    "Clock",
    "Cuid2Ids",
    "Envelope",
    "EnvelopeFactory",
    "Event",
    "FileEv",
    "IdFactory",
    "ImageMeta",
    "SequentialIds",
    "ServiceEv",
    "StartEv",
    "StopEv",
    "TextEv",
    "ToolCallEndEv",
    "ToolCallStartEv",
    "ToolStatus",
    "TurnEndEv",
    "TurnStartEv",
    "TurnStatus",
    "envelope_schema",
    "looks_like_cuid2",
    "parse_envelope",
    "subagent_id",
    "wall_clock_ms",
]
