"""Remote mode's two feeds, sans-IO: a recorded SDK stream through converter -> queue -> mirror,
merged with the transcript records that run wrote, in a chosen arrival order (tests, bench).

The mirror here drops records whose key it has already processed, as the session's does: the
first copy of a record wins, whichever feed brought it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal

import anyio

from happy_launcher.claude.converter import Converter
from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.queue import OrderedQueue, PromptSent, QueueItem
from happy_launcher.claude.records import Record, record_key
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.protocol import Envelope, SequentialIds, TurnStatus
from happy_launcher.session.mirror import Mirror
from happy_launcher.session.sinks import EnvelopeSink, MemorySink
from tests.support.sdk_stream import Interrupt, Prompt, load_stream

Order = Literal["sdk_first", "transcript_lags", "transcript_first"]
ORDERS: tuple[Order, ...] = ("sdk_first", "transcript_lags", "transcript_first")


class DedupeMirror:
    """A `QueueTarget`: the mirror, behind a filter of processed record keys."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        self.processed: set[str] = set()
        self.dropped = 0

    def batch(self) -> AbstractContextManager[object]:
        return self.mirror.batch()

    def deliver(self, records: Sequence[Record]) -> object:
        fresh = []
        for record in records:
            key = record_key(record)
            if key is not None:
                if key in self.processed:
                    self.dropped += 1
                    continue
                self.processed.add(key)
            fresh.append(record)
        return self.mirror.deliver(fresh)

    def prompt_sent(self, text: str, uuid: str | None = None) -> object:
        if uuid is not None:
            self.processed.add(uuid)
        return self.mirror.prompt_sent(text, uuid)

    def end_turn(
        self, status: TurnStatus, service: str | None = None, *, taken: tuple[str, ...] | None = None
    ) -> object:
        return self.mirror.end_turn(status, service, taken=taken)

    def close_turn(self, status: TurnStatus) -> object:
        return self.mirror.close_turn(status)


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


def run_live(items: list[QueueItem], sink: EnvelopeSink | None = None) -> tuple[list[Envelope], DedupeMirror]:
    """Apply the items through the ordered queue to a deduplicating mirror; its envelopes."""
    memory = MemorySink()
    target = DedupeMirror(Mirror(Mapper(SequentialIds("live")), sink or memory, clock=lambda: 0))
    queue = OrderedQueue()
    queue.put_all(items)
    queue.close()
    anyio.run(queue.run, target)
    return memory.envelopes, target


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
