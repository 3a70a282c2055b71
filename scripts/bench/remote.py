#!/usr/bin/env python3
"""Remote mode's SDK feed: converter + ordered queue + mapper + store, on the recorded SDK streams
of tests/fixtures/sdk (every scenario, one after the other, repeated with fresh ids so that
nothing is deduplicated away; prompts sent as remote mode sends them). Partial text (stream
deltas) is converted but goes to a screen, not through the queue: it is never stored.

- Throughput (target >= 20k envelopes/s), the consumer mapping and committing to the SQLite
  store one batch per wake-up (a batch: the items queued meanwhile):
  - burst: the whole stream queued before the consumer runs (a backlog: large batches);
  - paced: the producer yields to the loop after each message, as the SDK reader does (each
    message its own batch and commit, unless the consumer falls behind).
- Latency: one message at a time, each waited for until its envelopes are committed (no
  backlog, as at the SDK's real rate): yielded -> committed per message that makes a record or
  a turn event, p50 / p99 (targets <= 2 ms / <= 10 ms).
"""

from __future__ import annotations

import argparse
import gc
import re
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.claude.converter import Converter
from happy_launcher.claude.queue import OrderedQueue, PromptSent, QueueItem
from happy_launcher.claude.sdk_items import Partial, SessionStarted
from happy_launcher.session.core import Session
from tests.support.sdk_stream import FIXTURES, Interrupt, Prompt, decode_message, scenario_names

_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-([0-9a-f]{12})")
_PROVIDER_ID = re.compile(rb"\b(toolu|msg)_([0-9A-Za-z]+)")


def stream(reps: int) -> list[Any]:
    """Every scenario's recorded stream, `reps` times, each copy with its own uuids and ids."""
    lines = [
        line
        for name in scenario_names()
        for line in (FIXTURES / name / "stream.jsonl").read_bytes().splitlines()
        if line.strip()
    ]
    out = []
    for rep in range(reps):
        tag = f"{rep:012x}".encode()

        def fresh_uuid(m: re.Match[bytes], tag: bytes = tag) -> bytes:
            return m.group(0)[:-12] + tag

        def fresh_id(m: re.Match[bytes], tag: bytes = tag) -> bytes:
            return m.group(0) + b"x" + tag

        for line in lines:
            out.append(decode_message(orjson.loads(_PROVIDER_ID.sub(fresh_id, _UUID.sub(fresh_uuid, line)))))
    return out


def items_of(converter: Converter, message: Any) -> list[QueueItem]:
    """What the SDK reader queues for one message (partial text goes to the screen instead)."""
    if isinstance(message, Prompt):
        return [PromptSent(message.text, message.uuid)]
    if isinstance(message, Interrupt):
        return []
    return [item for item in converter.convert(message) if not isinstance(item, Partial)]


class Pipeline:
    """The session's real commit point: envelopes, keys and mapper state in one transaction."""

    def __init__(self, home: Path) -> None:
        self.session = Session(home, Path("/"))
        self.target = self.session.mirror
        self.queue = OrderedQueue()
        self.converter = Converter()

    def envelopes(self) -> int:
        assert self.session.id is not None
        return len(self.session.store.raw_envelopes(self.session.id))

    def close(self) -> None:
        self.session.close()


async def feed(pipe: Pipeline, messages: list[Any], *, paced: bool) -> float:
    """Seconds to convert, queue, map and commit every message."""
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipe.queue.run, pipe.target)
        for message in messages:
            pipe.queue.put_all(items_of(pipe.converter, message))
            if paced:
                await anyio.lowlevel.checkpoint()  # the SDK reader awaits each message
        pipe.queue.close()
    return time.perf_counter() - start


async def one_by_one(pipe: Pipeline, messages: list[Any]) -> list[float]:
    """Seconds from each message yielded to its envelopes committed (those making any)."""
    samples = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipe.queue.run, pipe.target)
        for message in messages:
            start = time.perf_counter()
            items = items_of(pipe.converter, message)
            pipe.queue.put_all(items)
            await pipe.queue.flushed()
            if any(not isinstance(item, SessionStarted) for item in items):
                samples.append(time.perf_counter() - start)
        pipe.queue.close()
    return samples


def in_fresh_store(messages: list[Any], how: str) -> tuple[Any, int]:
    with tempfile.TemporaryDirectory() as tmp:
        pipe = Pipeline(Path(tmp))
        try:
            if how == "latency":
                result: Any = anyio.run(one_by_one, pipe, messages)
            else:
                result = anyio.run(partial(feed, paced=how == "paced"), pipe, messages)
            return result, pipe.envelopes()
        finally:
            pipe.close()


def run(messages: list[Any], runs: int) -> None:
    seconds: dict[str, list[float]] = {"burst": [], "paced": []}
    p50: list[float] = []
    p99: list[float] = []
    envelopes = 0
    for _ in range(runs):  # the measurements alternate: a noisy moment hits all of them alike
        for how in seconds:
            elapsed, envelopes = in_fresh_store(messages, how)
            seconds[how].append(elapsed)
        samples, _ = in_fresh_store(messages, "latency")
        samples.sort()
        p50.append(samples[len(samples) // 2] * 1000)
        p99.append(samples[int(len(samples) * 0.99)] * 1000)
    print(f"{len(messages)} SDK messages -> {envelopes} envelopes (median of {runs} runs)")
    for how, label in (("burst", "burst (queued at once)"), ("paced", "paced (a loop turn per message)")):
        rate = envelopes / statistics.median(seconds[how]) / 1000
        print(f"  throughput, {label:32} {rate:6.1f}k envelopes/s  (target >= 20k/s)")
    print(
        f"  latency yielded -> committed ({len(samples)} messages): p50 {statistics.median(p50):.2f} ms,"
        f" p99 {statistics.median(p99):.2f} ms  (targets <= 2 / <= 10 ms)"
    )


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--reps", type=int, default=400, help="copies of the recorded streams (default 400)")
    parser.add_argument("--runs", type=int, default=5, help="runs (median; default 5)")
    args = parser.parse_args()
    messages = stream(args.reps)
    # The recorded stream is held in memory only to replay it: out of the collector's way, or
    # every full collection walks it (a live SDK reader holds one message at a time).
    gc.freeze()
    run(messages, args.runs)


if __name__ == "__main__":
    main()
