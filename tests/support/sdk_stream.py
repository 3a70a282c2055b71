"""Recorded Agent SDK streams (tests/fixtures/sdk, made by scripts/gen_sdk_fixtures.py).

A stream is JSON lines: each SDK message object as a tagged dict (`_class`: its class name in
`claude_agent_sdk.types`; nested dataclasses such as content blocks are tagged the same way),
plus the markers of what the driver did at that point: `Prompt` (a prompt sent) and `Interrupt`.
`load_stream` rebuilds the SDK objects, so tests feed the converter exactly what the client
yielded.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import claude_agent_sdk.types as sdk_types
import orjson

from happy_launcher.remote.fake_sdk import FakeTurn

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sdk"


@dataclass(frozen=True, slots=True)
class Prompt:
    """The driver sent this prompt here, with this uuid (Claude's record of it has it too)."""

    text: str
    uuid: str | None = None


@dataclass(frozen=True, slots=True)
class Interrupt:
    """The driver called `client.interrupt()` here."""


def encode_message(obj: Any) -> Any:
    """An SDK message (or any value inside one) as JSON-ready data, dataclasses tagged."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {"_class": type(obj).__name__}
        for f in dataclasses.fields(obj):
            out[f.name] = encode_message(getattr(obj, f.name))
        return out
    if isinstance(obj, dict):
        return {str(k): encode_message(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [encode_message(v) for v in obj]
    return obj


def decode_message(data: Any) -> Any:
    """The inverse of `encode_message`: SDK objects rebuilt from their classes."""
    if isinstance(data, list):
        return [decode_message(v) for v in data]
    if not isinstance(data, dict):
        return data
    name = data.get("_class")
    if name is None:
        return {k: decode_message(v) for k, v in data.items()}
    if name == "Prompt":
        return Prompt(data["text"], data.get("uuid"))
    if name == "Interrupt":
        return Interrupt()
    cls = getattr(sdk_types, name)
    fields = [f.name for f in dataclasses.fields(cls) if f.init and f.name in data]
    return cls(**{name: decode_message(data[name]) for name in fields})


def load_stream(path: Path) -> list[Any]:
    """The SDK messages and driver markers of a recorded stream, in order."""
    return [decode_message(orjson.loads(line)) for line in path.read_bytes().splitlines() if line.strip()]


def scenario_dir(name: str) -> Path:
    return FIXTURES / name


def scenario_names() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "stream.jsonl").is_file())


def recorded_turns(scenario: Path) -> list[tuple[Prompt, FakeTurn]]:
    """Each prompt of a recorded stream with what Claude said to it (a `FakeSdkClient` turn):
    before an `Interrupt`, and after it."""
    turns: list[tuple[Prompt, list[Any], list[Any]]] = []
    said: list[Any] = []
    for message in load_stream(scenario / "stream.jsonl"):
        if isinstance(message, Prompt):
            turns.append((message, [], []))
            said = turns[-1][1]
        elif isinstance(message, Interrupt):
            said = turns[-1][2]
        else:
            said.append(message)
    return [(prompt, FakeTurn(before, after)) for prompt, before, after in turns]
