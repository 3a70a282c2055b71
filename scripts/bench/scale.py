#!/usr/bin/env python3
"""Many sessions at once: N mirrors (each its own process: the real scanner, watcher, mapper and
store commit of a `happy claude`, as scripts/bench/latency.py drives them, without Claude's PTY)
while one fake Claude appends records of the golden transcripts (tests/fixtures/golden, ids
renamed per session) to each session's transcript at `--rate` records/s.

Layouts: `separate` (each session in its own project directory) or `shared` (all in one).
Phases: `random` (each session at its own fixed phase of the period) or `step` (every session
appends within the same `--window` ms of each period: the worst case for the store's lock).
`--store per-session` gives each session its own HAPPY_HOME_DIR (its own sessions.db): the
lock-free bound of a database per session, for comparison.

Per configuration: append -> committed latency p50/p99 over every record of every session (and
the wall time of each store transaction, its wait for the write lock included), the
mirrors' CPU per appended record, RSS per mirror process. The machine's load is printed: on a
shared machine compare the rows of one run rather than figures across runs.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.claude.records import Record
from happy_launcher.claude.scanner import TranscriptScanner
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.claude.watch import make_watcher
from happy_launcher.session.core import Session
from scripts.bench.corpus import GOLDEN

_IDS = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|toolu_[A-Za-z0-9]+")
_FORK = multiprocessing.get_context("fork")
_SETTLE = 0.5  # s between the mirrors' readiness and the first append


@dataclass(frozen=True, slots=True)
class Config:
    n: int
    layout: str  # separate | shared
    phases: str  # random | step
    store: str  # shared | per-session


@dataclass(frozen=True, slots=True)
class Result:
    latencies: list[float]  # ms
    commits: list[float]  # ms, each store transaction's wall time
    cpu_per_record: float  # ms
    rss: list[float]  # MB, one per mirror
    load: float


def golden_lines() -> list[bytes]:
    """The golden main-file lines that carry a uuid (every one of them is measured)."""
    lines = []
    for path in sorted(GOLDEN.glob("*/*.jsonl")):
        for line in path.read_bytes().splitlines():
            if line.strip() and isinstance(orjson.loads(line).get("uuid"), str):
                lines.append(line)
    return lines


def session_lines(golden: list[bytes], session: int, count: int) -> list[tuple[str, bytes]]:
    """(uuid, line) x count for one session: golden lines, ids renamed per session and copy."""
    out: list[tuple[str, bytes]] = []
    copy = 0
    while len(out) < count:
        suffix = b"%04x%04x" % (session, copy)
        copy += 1
        for line in golden[: count - len(out)]:
            renamed = _IDS.sub(lambda m: m.group(0)[: -len(suffix)] + suffix, line)  # noqa: B023 (used at once)
            out.append((orjson.loads(renamed)["uuid"], renamed))
    return out


def mirror(
    home: Path, transcript: Path, count: int, ready: Event, start: Event, out: Path, profile: Path | None
) -> None:
    """One session's mirror (a child process): commit times by uuid, CPU seconds, RSS; with
    `profile`, a cProfile of its whole run written there."""
    committed: dict[str, int] = {}
    commits: list[float] = []  # wall ms of each store transaction (the wait for the lock included)

    async def main() -> float:
        session = Session(home, transcript.parent)
        append = session.store.append_envelopes

        def timed_append(*args: Any, **kwargs: Any) -> list[int]:
            t0 = time.perf_counter()
            try:
                return append(*args, **kwargs)
            finally:
                commits.append((time.perf_counter() - t0) * 1e3)

        session.store.append_envelopes = timed_append  # type: ignore[method-assign]
        session.deliver([])  # bind: the session row exists before the first record
        watcher = make_watcher()
        scanner = TranscriptScanner(SessionFiles(clock=time.monotonic), watcher)
        scanner.add_main(transcript)
        done = anyio.Event()

        async def deliver(batch: list[Record]) -> None:
            session.deliver(batch)  # returns after the store commit
            now = time.time_ns()
            for record in batch:
                committed[record.uuid or ""] = now
            if len(committed) >= count:
                done.set()

        gc.freeze()  # as `happy claude` does once its session is set up (local/tracker.py)
        async with anyio.create_task_group() as tg:
            await tg.start(scanner.run, deliver)
            ready.set()
            await anyio.to_thread.run_sync(start.wait)
            cpu0 = time.process_time()
            with anyio.move_on_after(count * 2 + 60):
                await done.wait()
            cpu = time.process_time() - cpu0
            tg.cancel_scope.cancel()
        watcher.close()
        session.close()
        return cpu

    if profile is None:
        cpu = anyio.run(main)
    else:
        import cProfile

        with cProfile.Profile() as prof:
            cpu = anyio.run(main)
        prof.dump_stats(profile)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB -> MB
    out.write_bytes(orjson.dumps({"committed": committed, "cpu": cpu, "rss": rss, "commits": commits}))


def fake_claude(
    plans: list[tuple[Path, list[tuple[str, bytes]]]],
    rate: float,
    phases: str,
    window: float,
    start: Event,
    out: Path,
) -> None:
    """Append every session's lines on schedule; the time each append landed, by uuid."""
    period = 1 / rate
    rng = random.Random(20)
    files = [path.open("ab", buffering=0) for path, _ in plans]
    fixed = [rng.uniform(0, period) for _ in plans]
    events = []
    for i, (_, lines) in enumerate(plans):
        for k, (uuid, line) in enumerate(lines):
            offset = fixed[i] if phases == "random" else rng.uniform(0, window)
            events.append((k * period + offset, i, uuid, line))
    events.sort(key=lambda e: e[0])
    stamps: dict[str, int] = {}
    start.wait()
    t0 = time.monotonic() + _SETTLE
    for at, i, uuid, line in events:
        delay = t0 + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # the writer's pace, not synchronisation
        files[i].write(line + b"\n")
        stamps[uuid] = time.time_ns()
    for f in files:
        f.close()
    out.write_bytes(orjson.dumps(stamps))


def run(
    cfg: Config, seconds: float, rate: float, window: float, golden: list[bytes], profile: Path | None = None
) -> Result:
    count = int(seconds * rate)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plans = []
        for i in range(cfg.n):
            project = root / "projects" / ("shared" if cfg.layout == "shared" else f"p{i}")
            project.mkdir(parents=True, exist_ok=True)
            home = root / ("home" if cfg.store == "shared" else f"home{i}")
            home.mkdir(exist_ok=True)
            plans.append((home, project / f"{i:08x}-0000-4000-8000-000000000000.jsonl"))
        start = _FORK.Event()
        procs = []
        for i, (home, transcript) in enumerate(plans):
            ready = _FORK.Event()
            profiled = profile if i == 0 else None
            args = (home, transcript, count, ready, start, root / f"mirror{i}.json", profiled)
            proc = _FORK.Process(target=mirror, args=args)
            proc.start()
            if not ready.wait(60):
                raise SystemExit(f"mirror {i} did not start")
            procs.append(proc)
        writes = [(t, session_lines(golden, i, count)) for i, (_, t) in enumerate(plans)]
        writer = _FORK.Process(
            target=fake_claude, args=(writes, rate, cfg.phases, window, start, root / "stamps.json")
        )
        writer.start()
        start.set()
        writer.join()
        for proc in procs:
            proc.join()
        load = os.getloadavg()[0]
        stamps: dict[str, int] = orjson.loads((root / "stamps.json").read_bytes())
        latencies, commits, cpu, rss = [], [], 0.0, []
        for i in range(cfg.n):
            got = orjson.loads((root / f"mirror{i}.json").read_bytes())
            cpu += got["cpu"]
            rss.append(got["rss"])
            commits.extend(got["commits"])
            for uuid, at in got["committed"].items():
                if uuid in stamps:
                    latencies.append((at - stamps[uuid]) / 1e6)
        missing = cfg.n * count - len(latencies)
        if missing:
            print(f"  warning: {missing} records not committed in time", file=sys.stderr)
        return Result(latencies, commits, cpu / max(1, len(latencies)) * 1e3, rss, load)


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", default="1,10,30", help="numbers of sessions, comma-separated")
    parser.add_argument(
        "--layout", default="separate,shared", help="separate and/or shared project directories"
    )
    parser.add_argument("--phases", default="random,step", help="random and/or step")
    parser.add_argument("--store", default="shared", help="shared and/or per-session (one sessions.db each)")
    parser.add_argument("--seconds", type=float, default=20, help="length of each configuration's run")
    parser.add_argument("--rate", type=float, default=5, help="records per second per session")
    parser.add_argument("--window", type=float, default=55, help="ms within which `step` sessions append")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the whole matrix (rows alternate)")
    parser.add_argument(
        "--profile", type=Path, help="write a cProfile of the first mirror here (the last run's; pstats)"
    )
    args = parser.parse_args()
    golden = golden_lines()
    configs = [
        Config(int(n), layout, phases, store)
        for n in args.n.split(",")
        for layout in args.layout.split(",")
        for phases in args.phases.split(",")
        for store in args.store.split(",")
    ]
    print(f"{args.rate:g} records/s per session, {args.seconds:g} s per run, step window {args.window:g} ms")
    print(
        f"{'N':>3} {'layout':8} {'phases':6} {'store':11} {'n rec':>6} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'max ms':>7} {'commit p50/p99':>14} {'CPU ms/rec':>10} {'RSS MB':>7} {'load':>5}"
    )
    for _ in range(args.rounds):
        for cfg in configs:
            r = run(cfg, args.seconds, args.rate, args.window / 1e3, golden, args.profile)
            print(
                f"{cfg.n:>3} {cfg.layout:8} {cfg.phases:6} {cfg.store:11} {len(r.latencies):>6} "
                f"{pct(r.latencies, 50):7.2f} {pct(r.latencies, 99):7.2f} {max(r.latencies):7.1f} "
                f"{pct(r.commits, 50):6.2f}/{pct(r.commits, 99):7.2f} "
                f"{r.cpu_per_record:10.3f} {statistics.mean(r.rss):7.1f} {r.load:5.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
