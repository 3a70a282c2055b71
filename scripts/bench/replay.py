#!/usr/bin/env python3
"""Benchmark `happy replay` (issue 7 §4: <= 3x a bare `json.loads` parse, on both kinds of transcript).

Two transcripts of ~100 MB made from the golden records of the real CLI: as Claude writes them
(mostly large bookkeeping records that make no envelope), and conversation records only (user,
assistant, system: nearly every record makes an envelope). On each, in one run and alternating
(median of n): a bare parse of every line with `json.loads` and with orjson (the floors), and our
parse + map + serialise pipeline in-process; then the `happy replay` command once, end to end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.claude.tail import LineTail
from happy_launcher.protocol import Cuid2Ids
from happy_launcher.session.replay import replay_file
from scripts.bench.corpus import build


def bare_parse(path: Path, loads: Callable[[bytes], Any]) -> int:
    """A floor: read the same lines the same way and parse each one, nothing else."""
    tail, n = LineTail(path), 0
    while lines := tail.read_lines():
        for line in lines:
            loads(line)
        n += len(lines)
    return n


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(path: Path, runs: int) -> dict[str, float]:
    """Median seconds of each step, the steps alternating within each of `runs` rounds."""
    with Path(os.devnull).open("wb") as devnull:
        steps: dict[str, Callable[[], object]] = {
            "json.loads": lambda: bare_parse(path, json.loads),
            "orjson": lambda: bare_parse(path, orjson.loads),
            "replay": lambda: replay_file(path, Cuid2Ids(), devnull),
        }
        times: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(runs):
            for name, step in steps.items():
                times[name].append(timed(step))
        happy = Path(sys.executable).with_name("happy")
        cli = timed(
            lambda: subprocess.run([happy, "replay", path], stdout=devnull, stderr=devnull, check=True)
        )
    return {name: statistics.median(values) for name, values in times.items()} | {"cli": cli}


def report(title: str, path: Path, lines: int, size: int, runs: int) -> None:
    with Path(os.devnull).open("wb") as devnull:
        envelopes = replay_file(path, Cuid2Ids(), devnull).envelopes
    t = measure(path, runs)
    mb = size / 1e6
    print(f"{title}: {mb:.0f} MB, {lines} records -> {envelopes} envelopes (median of {runs} runs)")
    for label, key in (
        ("bare json.loads parse", "json.loads"),
        ("bare orjson parse", "orjson"),
        ("replay parse+map+serialise", "replay"),
    ):
        print(
            f"  {label:28} {t[key]:6.2f} s  {lines / t[key] / 1000:5.0f}k records/s  {mb / t[key]:5.0f} MB/s"
        )
    print(f"  {'`happy replay` command':28} {t['cli']:6.2f} s  (once, with interpreter start-up)")
    print(
        f"  ratio replay / json.loads: {t['replay'] / t['json.loads']:.2f} (target <= 3);"
        f"  replay / orjson: {t['replay'] / t['orjson']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100, help="size of each generated transcript (MB)")
    parser.add_argument("--runs", type=int, default=5, help="rounds per transcript (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for title, conversation in (
            ("as written (golden records)", False),
            ("conversation records only", True),
        ):
            path = Path(tmp) / "transcript.jsonl"
            lines, size = build(path, args.mb * 1_000_000, conversation_only=conversation)
            report(title, path, lines, size, args.runs)


if __name__ == "__main__":
    main()
