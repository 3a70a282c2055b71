#!/usr/bin/env python3
"""A resumed session with a large history, through the live pipeline (scanner, mapper, store, events
file), each run in a fresh process:

- `--happy-replay-existing`: the whole history is sent (targets: peak RSS <= 80 MB at 100 MB, event
  loop never blocked more than ~50 ms);
- plain resume: the history is indexed, not sent.

A record appended right at the start (behind the whole history) measures when live appends get
through; a task sleeping 5 ms in a loop measures how late the event loop lets it run (an upper
bound of how long the loop is blocked: asyncio runs a timer's task two loop turns after it is
due, so this is up to about two batches, plus whatever else this shared machine runs).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
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
from happy_launcher.session.core import Session
from happy_launcher.session.events_output import open_events_output
from scripts.bench.corpus import build
from scripts.bench.records import assistant_line

TICK = 0.005
LIVE_UUID = "bench-a-live"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


async def child(transcript: Path, home: Path, history_size: int) -> dict[str, float]:
    """`history_size`: bytes of history not to send (0: send it all)."""
    events = open_events_output(str(home / "events.jsonl"))
    session = Session(home, Path("/"), events=events)  # the real commit point: store, then events
    mirror = session.mirror
    files = SessionFiles(clock=time.monotonic)
    known = {transcript: history_size} if history_size else {}
    watcher = make_watcher()
    scanner = TranscriptScanner(files, watcher)
    scanner.add_main(transcript, known=known)
    gc.freeze()  # as LocalTracker does once set up
    base_rss, lateness, live_at = rss_mb(), [0.0], [0.0]
    done = anyio.Event()

    def deliver(batch: list[Record]) -> None:
        mirror.deliver(batch)
        if any(r.uuid == LIVE_UUID for r in batch):
            live_at[0] = time.perf_counter()
            done.set()

    async def ticker() -> None:
        while True:
            start = time.perf_counter()
            await anyio.sleep(TICK)
            lateness.append(time.perf_counter() - start - TICK)

    with transcript.open("ab") as f:
        f.write(assistant_line(0).replace(b"bench-a-0", LIVE_UUID.encode()) + b"\n")
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await tg.start(scanner.run, deliver)
        with anyio.fail_after(600):
            await done.wait()
        tg.cancel_scope.cancel()
    session.close()
    watcher.close()
    return {
        "seconds": live_at[0] - start,
        "max_block_ms": max(lateness) * 1e3,
        "peak_rss_mb": rss_mb(),
        "base_rss_mb": base_rss,
        "end_rss_mb": current_rss_mb(),
    }


def run_child(transcript: Path, send_history: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home:
        copy = Path(home) / "session.jsonl"  # the child appends to it
        shutil.copyfile(transcript, copy)
        mode = "send" if send_history else "index"
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode, str(copy), home],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100, help="size of the history (MB)")
    parser.add_argument("--runs", type=int, default=3, help="runs per case (median)")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "TRANSCRIPT", "HOME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, transcript, home = args.child
        history_size = 0 if mode == "send" else Path(transcript).stat().st_size
        print(json.dumps(anyio.run(child, Path(transcript), Path(home), history_size)))
        return
    print(f"resumed session with a {args.mb} MB history (median of {args.runs} runs, one process each):")
    with tempfile.TemporaryDirectory() as tmp:
        for corpus, conversation in (("golden records", False), ("conversation records", True)):
            path = Path(tmp) / "history.jsonl"
            lines, _ = build(path, args.mb * 1_000_000, conversation_only=conversation)
            for send in (True, False):
                runs = [run_child(path, send) for _ in range(args.runs)]
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                what = "--happy-replay-existing" if send else "resume (indexed)"
                print(
                    f"  {corpus:20} {lines:7} records, {what:24} {med['seconds']:5.2f} s to the live "
                    f"append   5 ms timer late by <= {med['max_block_ms']:5.1f} ms   peak RSS "
                    f"{med['peak_rss_mb']:4.0f} MB (at start {med['base_rss_mb']:3.0f}, at end "
                    f"{med['end_rss_mb']:3.0f})"
                )
    print("  (targets: peak RSS <= 80 MB, event loop never blocked more than ~50 ms)")


if __name__ == "__main__":
    main()
