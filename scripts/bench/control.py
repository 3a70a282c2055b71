#!/usr/bin/env python3
"""Control socket latency: an envelope committed (the FakeController's commit, which notifies the
server's subscription as the session's commit point does) -> a `watch`-style client, over the
real socket, has received and split it. One envelope at a time; p50/p90/p99 over --count, medians
of --runs runs.

`--sessions N[,N…]`: instead, `happy sessions` (the real CLI, a process) with N sessions running, each
a process of its own serving its real control socket over a FakeController, with its row and a
first prompt in one shared store, as a launcher has them. Its wall time, --runs times in a row,
at once after the sessions started and once they have run --age seconds (a session loads its
protocol models, pydantic, by then or at its first connection), and how many it shows with their
mode (a session that does not answer within the listing's bound is shown without)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# Nothing here loads the protocol's models (pydantic): a session's process, started from this
# file, must load them at its first connection, as a launcher does.
from happy_launcher.control.fake import FakeController
from happy_launcher.control.server import serve
from happy_launcher.home.procs import this_process
from happy_launcher.protocol import EnvelopeFactory, SequentialIds
from happy_launcher.session.ports import SessionFacts
from happy_launcher.store.sessions import SessionStore


async def one_run(count: int, home: Path) -> list[float]:
    from happy_launcher.control.client import EnvelopeBytes, connect

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


async def one_session(home: Path, n: int) -> None:
    """A running session (this process): its row, a first prompt, its control socket; until stdin
    closes."""
    me = this_process(os.getpid())
    facts = SessionFacts(f"hs-bench-{n:03d}", None, "local", f"/bench/p{n}", me.pid, n, False)
    assert facts.happy_session_id is not None
    with SessionStore.open(home) as store:
        store.create_session(facts.happy_session_id, cwd=facts.cwd, started_at=n, owner=me)
        store.note_front(facts.happy_session_id, facts.mode, terminal=facts.terminal)  # as a launcher does
        factory = EnvelopeFactory(SequentialIds(f"s{n:04d}"))
        store.append_envelopes(facts.happy_session_id, [factory.user_text(f"prompt of session {n}", n)])
    async with anyio.create_task_group() as tg:
        await tg.start(partial(serve, FakeController(facts), home))
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await anyio.to_thread.run_sync(sys.stdin.read)  # the parent closes it to end us
        tg.cancel_scope.cancel()


@contextmanager
def running_sessions(home: Path, sessions: int) -> Iterator[None]:
    """`sessions` session processes serving under `home`, until the block ends."""
    me = [sys.executable, str(Path(__file__).resolve()), "--serve"]
    env = {**os.environ, "HAPPY_HOME_DIR": str(home)}
    procs = []
    try:
        for n in range(sessions):
            procs.append(
                subprocess.Popen([*me, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
            )
        for proc in procs:  # each says "ready" once it serves (bounded: the pipe ends if it dies)
            assert proc.stdout is not None and proc.stdout.readline() == b"ready\n", "a session died"
        yield
    finally:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(30)


def list_sessions(home: Path, sessions: int) -> tuple[float, int]:
    """(wall ms of one `happy sessions`, how many sessions it shows with their mode)."""
    env = {**os.environ, "HAPPY_HOME_DIR": str(home)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "happy_launcher", "sessions"], env=env, capture_output=True, check=True
    )
    wall = (time.perf_counter() - start) * 1000
    rows = done.stdout.decode().splitlines()[1:]
    assert sum(" running " in row for row in rows) == sessions, done.stdout.decode()
    return wall, sum(" running  local " in row for row in rows)


def listing(sessions: int, runs: int, age: float) -> None:
    """`happy sessions` with `sessions` running, at once after their start and once they have run
    `age` seconds (each listing after the first finds them warm whatever their age)."""
    for wait in (0.0, age):
        with tempfile.TemporaryDirectory() as tmp, running_sessions(Path(tmp), sessions):
            time.sleep(wait)  # the sessions' age: the scenario, not a synchronisation
            got = [list_sessions(Path(tmp), sessions) for _ in range(runs)]
        walls = ", ".join(f"{wall:.0f} ms ({moded} with a mode)" for wall, moded in got)
        print(
            f"happy sessions with {sessions} running, {wait:g} s after their start: {walls}; "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sessions", help="time `happy sessions` with this many running (comma-separated)")
    parser.add_argument("--age", type=float, default=4.0, help="s the sessions run before listed again")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # one session's process
    args = parser.parse_args()
    if args.serve is not None:
        anyio.run(one_session, Path(os.environ["HAPPY_HOME_DIR"]), args.serve)
        return
    if args.sessions:
        for sessions in args.sessions.split(","):
            listing(int(sessions), args.runs, args.age)
        return
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
