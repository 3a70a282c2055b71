#!/usr/bin/env python3
"""A long session's history, read back: a synthetic store of --envelopes envelopes (built
directly, in batches, as an ended session; typical turns: see web.py's `history`), then
`happy watch --from-start --json` of it and of a 1,000-envelope session in the same store,
alternating, --rounds times: command start -> first line, -> last line, and the process's peak
RSS; beside them the floor, `happy --version` (the CLI's start-up). Also the WAL's largest size
while the store was built (one burst of commits, a reader of the store beside it). With --page,
the web page on each session (Chromium under Playwright, over the real `happy web`): page load
-> first transcript paint, the JS heap and the transcript's DOM nodes once the window is shown."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.protocol import EnvelopeFactory, SequentialIds
from happy_launcher.store.sessions import SessionStore
from scripts.bench.web import history
from tests.support.web import WebServer, chromium, paired_context

SESSION, SHORT = "hs-long", "hs-short"
BATCH = 2000  # envelopes per commit while building


def build(home: Path, count: int) -> int:
    """The store, in one burst of commits with a reader beside it; the WAL's largest size."""
    factory = EnvelopeFactory(SequentialIds("long"))
    largest, done = 0, threading.Event()
    with SessionStore.open(home) as store:
        store.create_session(SESSION, cwd="/bench", started_at=1, status="completed")
        data = store.data_file(SESSION)
        wal = data.with_name(f"{data.name}-wal")
        store.create_session(SHORT, cwd="/bench", started_at=2, status="completed")
        store.append_envelopes(SHORT, history(factory, 1000))

        def read() -> None:
            with SessionStore.open(home) as reader:
                last = 0
                while not done.is_set():
                    rows = reader.raw_envelopes(SESSION, last, 512)
                    last = rows[-1][0] if rows else last

        reader = threading.Thread(target=read)
        reader.start()
        for start in range(0, count, BATCH):
            store.append_envelopes(SESSION, history(factory, min(BATCH, count - start)))
            largest = max(largest, wal.stat().st_size)
        done.set()
        reader.join()
    return largest


def watch(home: Path, *argv: str) -> tuple[float, float, int, int]:
    """(ms to the first line, ms to the last, lines, peak RSS in KB) of one `happy *argv`."""
    env = {**os.environ, "HAPPY_HOME_DIR": str(home)}
    cmd = [sys.executable, "-m", "happy_launcher", *argv]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.perf_counter()
    lines = 1 + sum(1 for _ in proc.stdout)
    last = time.perf_counter()
    _pid, status, usage = os.wait4(proc.pid, 0)
    assert status == 0, status
    return (first - start) * 1000, (last - start) * 1000, lines, usage.ru_maxrss


def page(home: Path, rounds: int) -> dict[str, list[tuple[float, float, int]]]:
    """Per session: (ms to first paint, JS heap MB, transcript DOM nodes) of each page load."""
    got: dict[str, list[tuple[float, float, int]]] = {SESSION: [], SHORT: []}
    web = WebServer(home)
    try:
        with chromium() as browser:
            context = paired_context(browser, web)
            tab = context.new_page()
            cdp = context.new_cdp_session(tab)
            for _ in range(rounds):
                for session in got:
                    tab.goto("about:blank")
                    tab.goto(f"{web.base}/#s={session}")
                    tab.wait_for_function("() => window.happy.seqs.length >= 300", timeout=60_000)
                    heap = cdp.send("Runtime.getHeapUsage")["usedSize"] / 2**20
                    nodes = tab.evaluate(
                        "document.getElementById('transcript').getElementsByTagName('*').length"
                    )
                    got[session].append((tab.evaluate("window.happy.firstPaint"), heap, nodes))
    finally:
        web.kill()
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--envelopes", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--page", action="store_true", help="also the web page on each session")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        started = time.perf_counter()
        largest = build(home, args.envelopes)
        built = time.perf_counter() - started
        with SessionStore.open(home) as store:
            db = store.data_file(SESSION).stat().st_size
        print(
            f"store: {args.envelopes} envelopes committed in {built:.1f} s ({BATCH} per commit, a reader "
            f"beside): database {db >> 20} MB, WAL at most {largest / 2**20:.1f} MB (target <= 64 MB)"
        )
        cases = {
            "1M": ("watch", "--from-start", "--json", SESSION),
            "1K": ("watch", "--from-start", "--json", SHORT),
            "floor": ("--version",),
        }
        runs: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, argv in cases.items():
                runs[name].append(watch(home, *argv))
        assert all(run[2] == args.envelopes for run in runs["1M"]), [run[2] for run in runs["1M"]]
        medians = {name: [statistics.median(c) for c in zip(*got, strict=True)] for name, got in runs.items()}
        (first, last, _, rss), (short, _, _, short_rss), (floor, _, _, floor_rss) = medians.values()
        print(
            f"watch --from-start --json, medians of n={args.rounds}: {args.envelopes} envelopes: first line "
            f"{first:.0f} ms, all lines {last / 1000:.1f} s, peak RSS {rss / 1024:.0f} MB; 1,000 envelopes: "
            f"first line {short:.0f} ms, RSS {short_rss / 1024:.0f} MB; `happy --version` {floor:.0f} ms, "
            f"RSS {floor_rss / 1024:.0f} MB (targets: first line <= 100 ms, RSS <= 60 MB); "
            f"load {os.getloadavg()[0]:.1f}"
        )
        if args.page:
            loads = {
                name: [statistics.median(c) for c in zip(*got, strict=True)]
                for name, got in page(home, args.rounds).items()
            }
            (paint, heap, nodes), (short_paint, short_heap, short_nodes) = loads.values()
            print(
                f"page, medians of n={args.rounds} loads: {args.envelopes} envelopes: first paint "
                f"{paint:.0f} ms, JS heap {heap:.1f} MB, {nodes:.0f} transcript nodes; 1,000 envelopes: "
                f"{short_paint:.0f} ms, "
                f"{short_heap:.1f} MB, {short_nodes:.0f} nodes (target: first paint <= 500 ms); "
                f"load {os.getloadavg()[0]:.1f}"
            )


if __name__ == "__main__":
    main()
