#!/usr/bin/env python3
"""Benchmark `happy replay` (issue: ratio <= 3 vs a bare parse, >= 50k records/s).

Measures, in one run on the same file: a bare orjson parse of every line (the floor), our
parse+map+serialise pipeline in-process, and the `happy replay` command end to end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.claude.tail import LineTail
from happy_launcher.protocol import Cuid2Ids
from happy_launcher.session.replay import replay_file
from scripts.bench.corpus import build


def bare_parse(path: Path) -> int:
    """The floor: read the same lines the same way and parse each one, nothing else."""
    tail, n = LineTail(path), 0
    while lines := tail.read_lines():
        for line in lines:
            orjson.loads(line)
        n += len(lines)
    return n


def best_of(runs: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100, help="size of the generated transcript (MB)")
    parser.add_argument("--runs", type=int, default=3, help="best of N for each measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        lines, size = build(path, args.mb * 1_000_000)
        with Path(os.devnull).open("wb") as devnull:
            floor = best_of(args.runs, lambda: bare_parse(path))
            ours = best_of(args.runs, lambda: replay_file(path, Cuid2Ids(), devnull))
            summary = replay_file(path, Cuid2Ids(), devnull)
            happy = Path(sys.executable).with_name("happy")
            cli = best_of(
                1, lambda: subprocess.run([happy, "replay", path], stdout=devnull, stderr=devnull, check=True)
            )
    mb = size / 1e6
    print(f"transcript: {mb:.0f} MB, {lines} records -> {summary.envelopes} envelopes")
    for label, seconds in (("bare JSON parse (floor)", floor), ("replay parse+map+serialise", ours)):
        print(
            f"{label:30} {seconds:6.2f} s  {lines / seconds / 1000:7.0f}k records/s  {mb / seconds:5.0f} MB/s"
        )
    print(f"{'`happy replay` command':30} {cli:6.2f} s  (with interpreter start-up)")
    print(f"{'ratio replay / floor':30} {ours / floor:6.2f}    (target <= 3)")


if __name__ == "__main__":
    main()
