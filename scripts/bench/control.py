#!/usr/bin/env python3
"""Control socket latency: an envelope committed (the FakeController's commit, which notifies the
server's subscription as the session's commit point does) -> a `watch`-style client, over the
real socket, has received and split it. One envelope at a time; p50/p90/p99 over --count, medians
of --runs runs."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.control.client import EnvelopeBytes, connect
from happy_launcher.control.fake import FakeController
from happy_launcher.control.server import serve
from happy_launcher.protocol import EnvelopeFactory, SequentialIds
from happy_launcher.session.ports import SessionFacts


async def one_run(count: int, home: Path) -> list[float]:
    facts = SessionFacts("hs-bench", None, "local", "/", os.getpid(), 0, False)
    controller = FakeController(facts)
    factory = EnvelopeFactory(SequentialIds("bench"))
    latencies: list[float] = []
    async with anyio.create_task_group() as tg:
        path = await tg.start(partial(serve, controller, home))
        async with connect(path) as client:
            await client.subscribe(None)
            events = client.events()
            for n in range(count):
                envelope = factory.user_text(f"a typical message of a sentence or two, number {n}", n)
                start = time.perf_counter_ns()
                controller.commit([envelope])
                event = await anext(events)
                latencies.append((time.perf_counter_ns() - start) / 1e6)
                assert isinstance(event, EnvelopeBytes) and event.seq == n + 1
        tg.cancel_scope.cancel()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, list[float]] = {"p50": [], "p90": [], "p99": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as home:
            latencies = anyio.run(one_run, args.count, Path(home))
        q = statistics.quantiles(latencies, n=100)
        for name, value in (("p50", q[49]), ("p90", q[89]), ("p99", q[98])):
            figures[name].append(value)
    load = os.getloadavg()[0]
    summary = ", ".join(f"{name} {statistics.median(values):.3f} ms" for name, values in figures.items())
    print(
        f"control: committed -> watch client received, {args.count} envelopes x {args.runs} runs "
        f"(medians; load {load:.1f}): {summary} (target p50 <= 2 ms)"
    )


if __name__ == "__main__":
    main()
