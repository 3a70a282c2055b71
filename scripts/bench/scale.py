#!/usr/bin/env python3
"""Many sessions at once: N mirrors (each its own process: the real scanner, watcher, mapper and
store commit of a `happy claude`, as scripts/bench/latency.py drives them, without Claude's PTY)
while one fake Claude appends records of the golden transcripts (tests/fixtures/golden, ids
renamed per session) to each session's transcript at `--rate` records/s.

Layouts: `separate` (each session in its own project directory) or `shared` (all in one).
Phases: `random` (each session at its own fixed phase of the period) or `step` (every session
appends within the same `--window` ms of each period: the worst case for the store's lock).
`--batch K`: K records per write, as Claude flushes several at once (its TUI: 3 on average, 1
to 10); the default, one per write, is the worst case, a wake-up per record.
`--store per-session` gives each session its own HAPPY_HOME_DIR: nothing shared at all. In one
home (`shared`, the default) each session has its own database already and shares only the
registry, which it writes a few times in its life: the two rows should match.

Beside them, as the issue's users have them: `--watchers` `happy watch` clients (default 10,
round-robin over the sessions) and the web page open on the first session (`--no-page`: none);
every mirror serves its control socket, and the run starts once each has all its clients
(scale_clients.py). Each watcher must print every envelope of its session, or the run fails.

Per configuration: append -> committed latency p50/p99 over every record of every session that
makes envelopes (one that makes none has nothing to wait for: its key goes with the next
commit), the wall time of each store transaction (its wait for the write lock included), the
mirrors' CPU per appended record (every record), RSS per mirror process. The machine's load is printed: on a
shared machine compare the rows of one run rather than figures across runs.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from multiprocessing.context import ForkServerProcess
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
from happy_launcher.control.server import load_protocol, serve
from happy_launcher.session.core import Session
from scripts.bench.scale_clients import (
    CLIENTS_WITHIN,
    MirrorController,
    expected_clients,
    page_open,
    watching,
)
from scripts.bench.scale_writer import fake_claude, golden_lines, session_lines

# Children start from a fork server started before anything else: one forked from this process
# would have every page this process grew (results, the golden lines) mapped, and counted in its
# RSS, as a launcher started on its own does not.
_CTX = multiprocessing.get_context("forkserver")


@dataclass(frozen=True, slots=True)
class Config:
    n: int
    layout: str  # separate | shared
    phases: str  # random | step
    store: str  # shared | per-session


@dataclass(frozen=True, slots=True)
class Options:
    seconds: float
    rate: float
    window: float  # s
    watchers: int
    page: bool
    profile: Path | None
    batch: int  # records per write


@dataclass(frozen=True, slots=True)
class Result:
    latencies: list[float]  # ms
    commits: list[float]  # ms, each store transaction's wall time
    cpu_per_record: float  # ms
    rss: list[float]  # MB, one per mirror
    load: float


@dataclass(frozen=True, slots=True)
class Gates:
    """A mirror's: `serving` once its socket answers (its happy id in `<out>.id`), `ready` once
    its clients follow it, `start` set by the parent for every mirror at once."""

    serving: Event
    ready: Event
    start: Event


def mirror(
    home: Path, transcript: Path, count: int, clients: int, gates: Gates, out: Path, profile: Path | None
) -> None:
    """One session's mirror (a child process) serving its control socket to `clients` clients:
    commit times by uuid, CPU seconds, RSS, the envelopes it committed; with `profile`, a
    cProfile of its whole run written there."""
    committed_at = [0]  # when the last store transaction returned (ns)
    handled: dict[str, int | None] = {}  # by uuid: when its envelopes were committed (None: made none)
    envelopes: list[int] = []
    commits: list[float] = []  # wall ms of each store transaction (the wait for the lock included)

    async def main() -> float:
        session = Session(home, transcript.parent)
        append = session.store.append_envelopes

        def timed_append(*args: Any, **kwargs: Any) -> list[int]:
            t0 = time.perf_counter()
            try:
                return append(*args, **kwargs)
            finally:
                committed_at[0] = time.time_ns()
                commits.append((time.perf_counter() - t0) * 1e3)

        session.store.append_envelopes = timed_append  # type: ignore[method-assign]
        session.deliver([])  # bind: the session row exists before the first record
        assert session.id is not None
        session.store.note_front(session.id, "local", terminal=True)  # as a launcher does (runner/)
        controller = MirrorController(session, transcript.parent, clients)
        watcher = make_watcher()
        scanner = TranscriptScanner(SessionFiles(clock=time.monotonic), watcher)
        scanner.add_main(transcript)
        done = anyio.Event()

        def deliver(batch: list[Record]) -> None:
            # Committed as the store's transaction returns (the clients are sent it after).
            # A record that makes nothing is not waited for: its key goes with the next commit.
            made = session.deliver(batch)
            for record in batch:
                handled[record.uuid or ""] = committed_at[0] if made else None
            if len(handled) >= count:
                done.set()

        gc.freeze()  # as `happy claude` does once its session is set up (local/tracker.py)
        async with anyio.create_task_group() as tg:
            # The protocol's models loaded now, not by the server's warm-up 2 s into the measured
            # run (~100 ms of CPU, once: not a record's cost).
            await anyio.to_thread.run_sync(load_protocol)
            await tg.start(partial(serve, controller, home, warm_after=None))
            out.with_suffix(".id").write_text(session.id)
            gates.serving.set()
            await tg.start(scanner.run, deliver)
            with anyio.fail_after(CLIENTS_WITHIN):
                await controller.subscribed.wait()
            gates.ready.set()
            await anyio.to_thread.run_sync(gates.start.wait)
            cpu0 = time.process_time()
            with anyio.move_on_after(count * 2 + 60):
                await done.wait()
            cpu = time.process_time() - cpu0
            envelopes.append(len(session.store.raw_envelopes(session.id, 0, 1 << 30)))
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
    out.write_bytes(
        orjson.dumps(
            {"handled": handled, "cpu": cpu, "rss": rss, "commits": commits, "envelopes": envelopes[0]}
        )
    )


def run(cfg: Config, opts: Options, golden: list[bytes]) -> Result:
    count = int(opts.seconds * opts.rate)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plans = []
        for i in range(cfg.n):
            project = root / "projects" / ("shared" if cfg.layout == "shared" else f"p{i}")
            project.mkdir(parents=True, exist_ok=True)
            home = root / ("home" if cfg.store == "shared" else f"home{i}")
            home.mkdir(exist_ok=True)
            plans.append((home, project / f"{i:08x}-0000-4000-8000-000000000000.jsonl"))
        start = _CTX.Event()
        procs, gates = _start_mirrors(plans, count, opts, start, root)
        writes = [(t, session_lines(golden, i, count)) for i, (_, t) in enumerate(plans)]
        writer = _CTX.Process(
            target=fake_claude,
            args=(writes, opts.rate, cfg.phases, opts.window, start, root / "stamps.json", opts.batch),
        )
        writer.start()
        sessions = [(home, (root / f"mirror{i}.id").read_text()) for i, (home, _) in enumerate(plans)]
        with ExitStack() as clients:
            watchers = clients.enter_context(watching(sessions, opts.watchers, root))
            if opts.page:
                clients.enter_context(page_open(*sessions[0]))
            for i, gate in enumerate(gates):
                if not gate.ready.wait(CLIENTS_WITHIN):
                    raise SystemExit(f"mirror {i}'s clients did not all subscribe")
            start.set()
            writer.join()
            for proc in procs:
                proc.join()
            watched = [(w.session, w.lines()) for w in watchers]
        return _collect(root, cfg.n, count, watched)


def _start_mirrors(
    plans: list[tuple[Path, Path]], count: int, opts: Options, start: Event, root: Path
) -> tuple[list[ForkServerProcess], list[Gates]]:
    """Every mirror, each serving its socket (bounded) before the next starts."""
    clients = expected_clients(len(plans), opts.watchers, opts.page)
    procs, gates = [], []
    for i, (home, transcript) in enumerate(plans):
        gate = Gates(_CTX.Event(), _CTX.Event(), start)
        profiled = opts.profile if i == 0 else None
        args = (home, transcript, count, clients[i], gate, root / f"mirror{i}.json", profiled)
        proc = _CTX.Process(target=mirror, args=args)
        proc.start()
        if not gate.serving.wait(60):
            raise SystemExit(f"mirror {i} did not start")
        procs.append(proc)
        gates.append(gate)
    return procs, gates


def _collect(root: Path, n: int, count: int, watched: list[tuple[int, int]]) -> Result:
    """The run's figures; every watcher must have printed every envelope of its session."""
    load = os.getloadavg()[0]
    stamps: dict[str, int] = orjson.loads((root / "stamps.json").read_bytes())
    latencies, commits, cpu, rss, envelopes, handled = [], [], 0.0, [], [], 0
    for i in range(n):
        got = orjson.loads((root / f"mirror{i}.json").read_bytes())
        cpu += got["cpu"]
        rss.append(got["rss"])
        commits.extend(got["commits"])
        envelopes.append(got["envelopes"])
        handled += len(got["handled"])
        for uuid, at in got["handled"].items():
            if uuid in stamps and at is not None:
                latencies.append((at - stamps[uuid]) / 1e6)
    missing = n * count - handled
    if missing:
        print(f"  warning: {missing} records not handled in time", file=sys.stderr)
    for session, lines in watched:
        if lines != envelopes[session]:
            raise SystemExit(
                f"a watcher of session {session} printed {lines} of {envelopes[session]} envelopes"
            )
    return Result(latencies, commits, cpu / max(1, handled) * 1e3, rss, load)


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
    parser.add_argument(
        "--store", default="shared", help="shared (one HAPPY_HOME_DIR) and/or per-session (one home each)"
    )
    parser.add_argument("--seconds", type=float, default=20, help="length of each configuration's run")
    parser.add_argument("--rate", type=float, default=5, help="records per second per session")
    parser.add_argument("--window", type=float, default=55, help="ms within which `step` sessions append")
    parser.add_argument(
        "--batch", type=int, default=1, help="records per write (Claude flushes several; 1: the worst case)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="repeat the whole matrix (rows alternate)")
    parser.add_argument(
        "--profile", type=Path, help="write a cProfile of the first mirror here (the last run's; pstats)"
    )
    parser.add_argument("--watchers", type=int, default=10, help="`happy watch` clients, round-robin")
    parser.add_argument(
        "--page",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the web page on the first session",
    )
    args = parser.parse_args()
    opts = Options(
        args.seconds, args.rate, args.window / 1e3, args.watchers, args.page, args.profile, args.batch
    )
    golden = golden_lines()
    configs = [
        Config(int(n), layout, phases, store)
        for n in args.n.split(",")
        for layout in args.layout.split(",")
        for phases in args.phases.split(",")
        for store in args.store.split(",")
    ]
    print(
        f"{args.rate:g} records/s per session, {args.batch} per write, {args.seconds:g} s per run, "
        f"step window {args.window:g} ms; "
        f"{args.watchers} watch clients, {'a page open' if args.page else 'no page'}"
    )
    print(
        f"{'N':>3} {'layout':8} {'phases':6} {'store':11} {'n rec':>6} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'max ms':>7} {'commit p50/p99':>14} {'CPU ms/rec':>10} {'RSS MB':>7} {'load':>5}"
    )
    for _ in range(args.rounds):
        for cfg in configs:
            r = run(cfg, opts, golden)
            print(
                f"{cfg.n:>3} {cfg.layout:8} {cfg.phases:6} {cfg.store:11} {len(r.latencies):>6} "
                f"{pct(r.latencies, 50):7.2f} {pct(r.latencies, 99):7.2f} {max(r.latencies):7.1f} "
                f"{pct(r.commits, 50):6.2f}/{pct(r.commits, 99):7.2f} "
                f"{r.cpu_per_record:10.3f} {statistics.mean(r.rss):7.1f} {r.load:5.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
