"""Remote mode's two feeds, sans-IO: a recorded SDK stream through converter -> queue -> mirror,
merged with the transcript records that run wrote, in a chosen arrival order (tests, bench).

The mirror drops records whose key it has already processed (`seen`), as the session's does:
the first copy of a record wins, whichever feed brought it.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio

from happy_launcher.claude.converter import Converter
from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.queue import OrderedQueue, PromptSent, QueueItem
from happy_launcher.claude.records import Record, record_key
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.protocol import Envelope, SequentialIds, parse_envelope
from happy_launcher.session.mirror import Mirror
from happy_launcher.session.replay import replay_file
from happy_launcher.session.sinks import EnvelopeSink, MemorySink
from tests.support.sdk_stream import Interrupt, Prompt, load_stream

Order = Literal["sdk_first", "transcript_lags", "transcript_first"]
ORDERS: tuple[Order, ...] = ("sdk_first", "transcript_lags", "transcript_first")


def main_transcript(scenario: Path) -> Path:
    return next(p for p in scenario.glob("*.jsonl") if p.name != "stream.jsonl")


def transcript_records(scenario: Path) -> list[Record]:
    """The transcript's records in the order a reading of the finished files gives them."""
    files = SessionFiles()
    files.add_main(main_transcript(scenario))
    return [*files.read_new(), *files.finish()]


def sdk_groups(scenario: Path, converter: Converter, *, with_uuids: bool = True) -> Iterator[list[QueueItem]]:
    """What each step of the recorded stream puts in the queue: a prompt sent, or the items one
    SDK message makes (often none)."""
    for message in load_stream(scenario / "stream.jsonl"):
        if isinstance(message, Prompt):
            yield [PromptSent(message.text, message.uuid if with_uuids else None)]
        elif not isinstance(message, Interrupt):
            yield [*converter.convert(message)]


def merged(sdk: list[list[QueueItem]], transcript: list[Record], order: Order) -> list[QueueItem]:
    """Both feeds in one arrival order. `sdk_first`: the transcript after the whole stream;
    `transcript_lags`: each transcript record (with the ones before it) right after the SDK
    message that has its copy; `transcript_first`: right before it. A record the SDK never
    sends comes with the next one it does (and at the end)."""
    if order == "sdk_first":
        return [item for group in sdk for item in group] + transcript
    position = {key: i for i, r in enumerate(transcript) if (key := record_key(r)) is not None}
    out: list[QueueItem] = []
    released = 0
    for group in sdk:
        keys = [record_key(item) for item in group if isinstance(item, Record)]
        upto = max((position.get(key, -1) for key in keys if key is not None), default=-1)
        if order == "transcript_lags":
            out += group
        if upto >= released:
            out += transcript[released : upto + 1]
            released = upto + 1
        if order == "transcript_first":
            out += group
    return out + transcript[released:]


def replayed(scenario: Path) -> list[Envelope]:
    """What `happy replay` makes of the scenario's transcript."""
    out = io.BytesIO()
    replay_file(main_transcript(scenario), SequentialIds("replay"), out)
    return [parse_envelope(line) for line in out.getvalue().splitlines()]


def live_mirror(sink: EnvelopeSink) -> Mirror:
    """A live mirror (clock, ids) that skips records it has seen, as the session's does."""
    return Mirror(Mapper(SequentialIds("live")), sink, clock=lambda: 0, seen=set())


def run_live(items: list[QueueItem]) -> tuple[list[Envelope], int]:
    """Apply the items through the ordered queue to a live mirror: its envelopes, and how many
    records were skipped as copies of one already mapped."""
    sink = MemorySink()
    queue = OrderedQueue()
    queue.put_all(items)
    queue.close()
    anyio.run(queue.run, live_mirror(sink))
    keyed = [key for item in items if isinstance(item, Record) and (key := record_key(item)) is not None]
    prompts = [item.uuid for item in items if isinstance(item, PromptSent) and item.uuid is not None]
    return sink.envelopes, len(keyed) + len(prompts) - len(sink.keys)


def envelope_view(envelopes: list[Envelope]) -> list[dict[str, Any]]:
    """What must match across feeds: all but ids, times and usage; turns renamed T1, T2…"""
    turns: dict[str, str] = {}
    out = []
    for env in envelopes:
        item = env.to_dict()
        for key in ("id", "time", "usage"):
            item.pop(key, None)
        if "turn" in item:
            item["turn"] = turns.setdefault(item["turn"], f"T{len(turns) + 1}")
        out.append(item)
    return out
