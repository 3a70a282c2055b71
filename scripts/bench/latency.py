#!/usr/bin/env python3
"""Mirror latency: a writer process appends records to a transcript (one every 10 ms, each its own
write: the scanner wakes once per record, the worst case) while the live scanner runs; time from
the append to the envelope committed in the SQLite store (p50/p99; targets 5/25 ms). Also: our
process's CPU per appended record (target <= 0.5 ms), with a 1 MB vs a 100 MB existing transcript
(ratio target <= 1.2), and, in the same runs, the CPU of a bare loop that only wakes on the same
inotify events and reads the appended bytes: the floor of any Python mirror on this machine; and
of the same loop committing what it read, one SQLite transaction a wake-up: the floor of a mirror
that commits each record as it comes. Medians of --runs rounds, the cases alternating.

`--stages`: where a record's CPU goes, the mirror cut after each of its stages in turn (the
scanner's read and parse alone, then the mapper too, then the whole mirror with its commit) beside
the two floors, in alternating rounds with the 1 MB history.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.claude.records import Record
from happy_launcher.claude.scanner import TranscriptScanner
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.claude.watch import make_watcher
from happy_launcher.claude.watch.inotify import InotifyWatcher
from happy_launcher.session.core import Session
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


STAGES = ("read", "map", "full")


async def measure(
    transcript: Path, known: int, home: Path, count: int, gap: float, stage: str = "full"
) -> tuple[list[float], float]:
    """(latencies in ms, scanner-process CPU seconds per record). `stage`: what is done with the
    records the scanner read and parsed: nothing (read), map them (map), or the whole mirror."""
    session = Session(home, Path("/"))  # the real commit point (envelopes, keys, mapper state)
    mirror = session.mirror
    committed: dict[str, int] = {}
    done = anyio.Event()

    def deliver(batch: list[Record]) -> None:
        if stage == "full":
            mirror.deliver(batch)  # returns after the store commit
        elif stage == "map":
            for record in batch:
                mirror.mapper.feed(record, time.time_ns() // 1_000_000)
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
    session.close()
    return latencies_ms(stamps, committed), cpu / count


def latencies_ms(stamps_path: Path, committed: dict[str, int]) -> list[float]:
    stamps = dict(line.split() for line in stamps_path.read_text().splitlines())
    return [(committed[k] - int(v)) / 1e6 for k, v in stamps.items()]


async def bare_loop(
    transcript: Path, offset: int, stamps: Path, count: int, gap: float, store: Path | None = None
) -> float:
    """CPU seconds per record of a loop that only wakes on inotify and reads what was appended,
    the way the scanner does (the file watched by itself and kept open, read in the loop's reader
    callback); with `store`, that also commits what it read there, one SQLite transaction a
    wake-up (WAL, as the store's: the floor of a mirror that commits each record as it comes)."""
    db = None if store is None else _bare_store(store)
    watcher = InotifyWatcher()
    watcher.watch(frozenset(), {transcript})
    fd = os.open(transcript, os.O_RDONLY)
    start = multiprocessing.get_context("fork").Event()
    args = (str(transcript), str(stamps), count, gap, start)
    proc = multiprocessing.get_context("fork").Process(target=writer, args=args)
    proc.start()
    read = [offset, 0]  # bytes, lines
    done = anyio.Event()

    def heard() -> None:
        data = os.pread(fd, 1 << 16, read[0])
        read[0] += len(data)
        read[1] += data.count(b"\n")
        if db is not None:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO appended (body) VALUES (?)", (data,))
            db.execute("COMMIT")
        if read[1] >= count:
            done.set()

    assert watcher.listen(heard)
    cpu0 = time.process_time()
    start.set()
    with anyio.fail_after(count * gap + 60):
        await done.wait()
    cpu = time.process_time() - cpu0
    proc.join()
    watcher.close()
    os.close(fd)
    if db is not None:
        db.close()
    return cpu / count


def _bare_store(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE TABLE appended (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    return db


def run(transcript: Path, count: int, gap: float) -> tuple[list[float], float, float, float]:
    """(latencies, CPU per record, and the bare loops' without and with a commit) with a copy of
    `transcript`."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "session.jsonl"
        shutil.copyfile(transcript, copy)
        home = Path(tmp) / "home"
        home.mkdir()
        latencies, cpu = anyio.run(measure, copy, transcript.stat().st_size, home, count, gap)
        floor = anyio.run(bare_loop, copy, copy.stat().st_size, home / "bare-stamps.txt", count, gap)
        stamps, store = home / "commit-stamps.txt", home / "bare.db"
        committing = anyio.run(bare_loop, copy, copy.stat().st_size, stamps, count, gap, store)
        return latencies, cpu, floor, committing


def pct(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=500, help="records appended per run")
    parser.add_argument("--gap", type=float, default=0.01, help="seconds between appends")
    parser.add_argument("--runs", type=int, default=3, help="rounds (median)")
    parser.add_argument("--stages", action="store_true", help="where a record's CPU goes (see above)")
    args = parser.parse_args()
    if args.stages:
        stages(args.count, args.gap, args.runs)
        return
    results: dict[int, list[tuple[list[float], float, float, float]]] = {1: [], 100: []}
    with tempfile.TemporaryDirectory() as tmp:
        corpora = {mb: Path(tmp) / f"{mb}.jsonl" for mb in results}
        for mb, path in corpora.items():
            build(path, mb * 1_000_000)
        for _ in range(args.runs):
            for mb, path in corpora.items():
                results[mb].append(run(path, args.count, args.gap))
    med = {
        mb: (
            statistics.median(pct(r[0], 50) for r in rs),
            statistics.median(pct(r[0], 99) for r in rs),
            statistics.median(r[1] for r in rs),
            statistics.median(r[2] for r in rs),
            statistics.median(r[3] for r in rs),
        )
        for mb, rs in results.items()
    }
    (p50, p99, cpu_small, floor, committing), (big50, big99, cpu_big, _, _) = med[1], med[100]
    print(f"median of {args.runs} runs, {args.count} records appended {args.gap * 1e3:.0f} ms apart each:")
    print("mirror latency, append -> committed in the store, 1 MB transcript:")
    print(f"  p50 {p50:5.2f} ms  p99 {p99:5.2f} ms")
    print("  (targets: p50 <= 5 ms, p99 <= 25 ms)")
    print(f"same with a 100 MB transcript: p50 {big50:5.2f} ms  p99 {big99:5.2f} ms")
    print("CPU per appended record (our process: scanner + mapper + store):")
    print(f"  1 MB existing: {cpu_small * 1e3:5.3f} ms   100 MB existing: {cpu_big * 1e3:5.3f} ms")
    print("  (target <= 0.5 ms)")
    print(f"  ratio 100 MB / 1 MB: {cpu_big / cpu_small:5.2f}  (target <= 1.2)")
    print(f"  a bare loop (inotify wake-up + read, nothing else): {floor * 1e3:5.3f} ms")
    print(f"  the same loop, committing what it read (a transaction a wake-up): {committing * 1e3:5.3f} ms")
    print(f"  (load {os.getloadavg()[0]:.1f})")


def stages(count: int, gap: float, runs: int) -> None:
    cases = ("floor", *STAGES, "committing floor")
    cpu: dict[str, list[float]] = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "1.jsonl"
        build(corpus, 1_000_000)
        for r in range(runs):
            for case in cases:
                copy, home = Path(tmp) / f"{r}-{case}.jsonl", Path(tmp) / f"{r}-{case}"
                shutil.copyfile(corpus, copy)
                home.mkdir()
                size = copy.stat().st_size
                if case in STAGES:
                    cpu[case].append(anyio.run(measure, copy, size, home, count, gap, case)[1])
                else:
                    store = home / "bare.db" if case == "committing floor" else None
                    cpu[case].append(anyio.run(bare_loop, copy, size, home / "stamps.txt", count, gap, store))
    print(f"CPU per appended record, {count} records {gap * 1e3:.0f} ms apart, median of {runs} rounds:")
    labels = {
        "floor": "a bare loop: inotify wake-up + read",
        "read": "the scanner: wake-up, read and parse",
        "map": "... and the mapper",
        "full": "the whole mirror: ... and the store's commit",
        "committing floor": "the bare loop + a minimal SQLite transaction",
    }
    for case in cases:
        values = cpu[case]
        spread = f"{min(values) * 1e3:.3f}-{max(values) * 1e3:.3f}"
        print(f"  {labels[case]:<48} {statistics.median(values) * 1e3:6.3f} ms  ({spread})")
    print(f"  (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
