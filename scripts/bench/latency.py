#!/usr/bin/env python3
"""Mirror latency: a writer process appends records to a transcript while the live scanner runs;
time from the append to the envelope committed in the SQLite store (p50/p99; targets 5/25 ms).
Also: scanner CPU per appended record with a 1 MB vs a 100 MB existing transcript (target <= 1.2).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.records import Record
from happy_launcher.claude.scanner import TranscriptScanner
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.claude.watch import make_watcher
from happy_launcher.protocol import Cuid2Ids, wall_clock_ms
from happy_launcher.session.mirror import Mirror
from happy_launcher.session.sinks import StoreSink
from happy_launcher.session.store import SessionStore
from scripts.bench.corpus import build
from scripts.bench.records import assistant_line


def writer(path: str, stamps: str, count: int, gap: float, start: multiprocessing.synchronize.Event) -> None:
    """Another process, like Claude: append one record at a time, noting when each landed (in
    a file outside the watched directories: its writes must not wake the scanner)."""
    start.wait()
    with open(path, "ab", buffering=0) as f, open(stamps, "a", buffering=1) as s:  # noqa: PTH123
        for n in range(count):
            line = assistant_line(n)
            f.write(line + b"\n")
            s.write(f"bench-a-{n} {time.time_ns()}\n")
            time.sleep(gap)  # the writer's pace, not synchronisation


async def measure(
    transcript: Path, known: int, home: Path, count: int, gap: float
) -> tuple[list[float], float]:
    """(latencies in ms, scanner-process CPU seconds per record)."""
    store = SessionStore.open(home)
    store.create_session("bench", cwd="/", started_at=wall_clock_ms())
    ids = Cuid2Ids()
    mirror = Mirror(Mapper(ids), StoreSink(store, "bench"), wall_clock_ms)
    committed: dict[str, int] = {}
    done = anyio.Event()

    async def deliver(batch: list[Record]) -> None:
        mirror.deliver(batch)  # returns after the store commit
        now = time.time_ns()
        for record in batch:
            committed[record.uuid or ""] = now
        if len(committed) >= count:
            done.set()

    watcher = make_watcher()
    scanner = TranscriptScanner(SessionFiles(), watcher)
    scanner.add_main(transcript, known={transcript: known})
    while not scanner.scan() and scanner.files.behind:  # index the history before measuring
        pass
    start = multiprocessing.get_context("fork").Event()
    stamps = home / "stamps.txt"
    args = (str(transcript), str(stamps), count, gap, start)
    proc = multiprocessing.get_context("fork").Process(target=writer, args=args)
    proc.start()
    async with anyio.create_task_group() as tg:
        await tg.start(scanner.run, deliver)
        cpu0 = time.process_time()
        start.set()
        with anyio.fail_after(count * gap + 60):
            await done.wait()
        cpu = time.process_time() - cpu0
        tg.cancel_scope.cancel()
    proc.join()
    watcher.close()
    store.close()
    return latencies_ms(stamps, committed), cpu / count


def latencies_ms(stamps_path: Path, committed: dict[str, int]) -> list[float]:
    stamps = dict(line.split() for line in stamps_path.read_text().splitlines())
    return [(committed[k] - int(v)) / 1e6 for k, v in stamps.items()]


def run(mb: int, count: int, gap: float) -> tuple[list[float], float]:
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(tmp) / "session.jsonl"
        _, size = build(transcript, mb * 1_000_000)
        home = Path(tmp) / "home"
        home.mkdir()
        return anyio.run(measure, transcript, size, home, count, gap)


def pct(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=500, help="records appended per run")
    parser.add_argument("--gap", type=float, default=0.01, help="seconds between appends")
    args = parser.parse_args()
    small, cpu_small = run(1, args.count, args.gap)
    big, cpu_big = run(100, args.count, args.gap)
    print(f"mirror latency, append -> committed in the store ({args.count} records, 1 MB transcript):")
    print(f"  p50 {pct(small, 50):6.2f} ms   p99 {pct(small, 99):6.2f} ms   max {max(small):6.2f} ms")
    print("  (targets: p50 <= 5 ms, p99 <= 25 ms)")
    print(f"same with a 100 MB transcript: p50 {pct(big, 50):6.2f} ms   p99 {pct(big, 99):6.2f} ms")
    print("scanner CPU per appended record (our process: scanner + mapper + store):")
    print(f"  1 MB existing: {cpu_small * 1e3:6.3f} ms   100 MB existing: {cpu_big * 1e3:6.3f} ms")
    print(f"  ratio 100 MB / 1 MB: {cpu_big / cpu_small:5.2f}  (target <= 1.2)")


if __name__ == "__main__":
    main()
