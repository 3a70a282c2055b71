#!/usr/bin/env python3
"""PTY benchmarks through the real `happy claude` path (HAPPY_CLAUDE_PATH = a stand-in child):

- throughput: a child printing 100 MB through happy's PTY vs the same child under `script -qc`
  (a plain PTY relay), alternating in one run; the ratio per round (median and range; target
  >= 0.85), from spawn and from the first byte, the time to the first byte, and the relay's CPU
  (user + sys of the relay and the child: steadier than wall time on a loaded machine);
- keystroke echo round-trip added by happy (child echoing in raw mode); target p50 < 1 ms;
- start-up: spawn to the child's exec (it writes a timestamp first thing), through happy vs
  direct; target <= 150 ms extra.
"""

from __future__ import annotations

import argparse
import os
import resource
import select
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import ptyprocess

HAPPY = str(Path(sys.executable).with_name("happy"))
REPO = str(Path(__file__).resolve().parents[2])
ECHO_CHILD = """
import os, sys, tty
tty.setraw(0)
os.write(1, b"READY\\n")
while True:
    b = os.read(0, 1)
    if not b or b == b"q":
        break
    os.write(1, b)
"""
# The echo child, plus a writer thread appending transcript records to the session happy mirrors
# (its id comes from happy's --session-id): keystrokes while happy's mirror is busy.
LOADED_ECHO_CHILD = (
    """
import os, sys, threading, time
from pathlib import Path
from happy_launcher.claude.paths import transcript_path
from scripts.bench.records import assistant_line
sid = sys.argv[sys.argv.index("--session-id") + 1]
path = transcript_path(os.environ, Path.cwd(), sid)
path.parent.mkdir(parents=True, exist_ok=True)
def write():
    with path.open("ab", buffering=0) as f:
        for n in range(1_000_000):
            f.write(assistant_line(n) + b"\\n")
            time.sleep(0.002)
threading.Thread(target=write, daemon=True).start()
"""
    + ECHO_CHILD
)


def spawn(argv: Sequence[str], env: dict[str, str]) -> ptyprocess.PtyProcess:
    return ptyprocess.PtyProcess.spawn(list(argv), env=env, dimensions=(40, 120))


def drain(proc: ptyprocess.PtyProcess) -> tuple[int, float | None]:
    """Read everything; (bytes, time of the first byte)."""
    total, first = 0, None
    while True:
        try:
            data = os.read(proc.fd, 1 << 16)
        except OSError:  # EIO: the child side closed
            break
        if not data:
            break
        first = first or time.perf_counter()
        total += len(data)
    proc.wait()
    proc.delayafterclose = 0  # ptyprocess sleeps 0.1 s in close(), even from __del__
    proc.close()
    return total, first


def wait_for(proc: ptyprocess.PtyProcess, marker: bytes, timeout: float = 30) -> None:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no {marker!r} in {seen[-200:]!r}")
        ready, _, _ = select.select([proc.fd], [], [], left)
        if ready:
            try:
                seen += os.read(proc.fd, 4096)
            except OSError as exc:
                raise RuntimeError(f"the child ended before {marker!r}: {seen[-500:]!r}") from exc


def stand_in(tmp: Path, name: str, command: str, *, pass_args: bool = False) -> Path:
    """An executable that runs `command`, with happy's Claude flags only if `pass_args`."""
    path = tmp / name
    args = ' "$@"' if pass_args else ""
    path.write_text(f"#!/bin/sh\nexec {command}{args}\n")
    path.chmod(0o755)
    return path


def throughput(tmp: Path, env: dict[str, str], mb: int, runs: int) -> dict[str, list[tuple[float, ...]]]:
    """Per relay, (MB/s from spawn to EOF, MB/s from the first byte to EOF, s to the first byte,
    CPU s) of each run; runs alternate between the relays so that both see the same machine."""
    data = tmp / "out.txt"
    line = b"0123456789abcdefghijklmnopqrstuvwxyz" * 3 + b"\n"
    with data.open("wb") as f:
        f.write(line * (mb * 1_000_000 // len(line)))
    child = stand_in(tmp, "cat-child", f"cat {shlex.quote(str(data))}")
    relays = {
        "script -qc": (["script", "-qc", str(child), "/dev/null"], env),
        "happy claude": ([HAPPY, "claude"], {**env, "HAPPY_CLAUDE_PATH": str(child)}),
    }
    rates: dict[str, list[tuple[float, ...]]] = {name: [] for name in relays}
    for _ in range(runs):
        for name, (argv, relay_env) in relays.items():
            cpu = _children_cpu()
            start = time.perf_counter()
            total, first = drain(spawn(argv, relay_env))
            end = time.perf_counter()
            first = first or start
            mbs, cpu = total / 1e6, _children_cpu() - cpu
            rates[name].append((mbs / (end - start), mbs / (end - first), first - start, cpu))
    return rates


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # reaped children and what they reaped
    return usage.ru_utime + usage.ru_stime


def echo_rtt(argv: Sequence[str], env: dict[str, str], n: int) -> list[float]:
    proc = spawn(argv, env)
    wait_for(proc, b"READY")
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        os.write(proc.fd, b"x")
        got = b""
        while b"x" not in got:
            select.select([proc.fd], [], [], 5)
            got += os.read(proc.fd, 64)
        samples.append((time.perf_counter() - start) * 1e3)
    os.write(proc.fd, b"q")
    drain(proc)
    return samples


def pct99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def startup(argv: Sequence[str], env: dict[str, str], stamp: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.time_ns()
        proc = spawn(argv, env)
        wait_for(proc, b"STARTED")
        times.append((int(stamp.read_text()) - start) / 1e6)
        drain(proc)
    return statistics.median(times)


def report_throughput(tmp: Path, env: dict[str, str], mb: int, runs: int) -> None:
    loads = os.getloadavg()[0]
    rates = throughput(tmp, env, mb, runs)
    medians = {name: [statistics.median(c) for c in zip(*got, strict=True)] for name, got in rates.items()}
    print(
        f"PTY throughput, {mb} MB, medians of {runs} alternating runs (load {loads:.1f} -> "
        f"{os.getloadavg()[0]:.1f}): spawn to EOF / first byte to EOF, time to the first byte, CPU"
    )
    for name, (whole, steady, first, cpu) in medians.items():
        print(f"  {name:13} {whole:6.1f} / {steady:6.1f} MB/s   {first * 1e3:5.0f} ms   {cpu:5.2f} s")
    plain, happy = rates.values()
    for label, i in (("from spawn", 0), ("from the first byte", 1)):
        ratios = [h[i] / p[i] for h, p in zip(happy, plain, strict=True)]
        print(
            f"  ratio happy / plain PTY {label}: median {statistics.median(ratios):.2f} "
            f"(per round {min(ratios):.2f}-{max(ratios):.2f}; target >= 0.85)"
        )


def report_echo(tmp: Path, env: dict[str, str]) -> None:
    python = shlex.quote(sys.executable)
    echo = stand_in(tmp, "echo-child", f"{python} -c {shlex.quote(ECHO_CHILD)}")
    direct = echo_rtt([str(echo)], env, 300)
    through = echo_rtt([HAPPY, "claude"], {**env, "HAPPY_CLAUDE_PATH": str(echo)}, 300)
    added = statistics.median(through) - statistics.median(direct)
    print(f"keystroke echo round-trip p50: direct {statistics.median(direct):.3f} ms")
    print(f"  through happy {statistics.median(through):.3f} ms, added {added:.3f} ms  (target < 1 ms)")
    loaded = stand_in(tmp, "loaded-echo", f"{python} -c {shlex.quote(LOADED_ECHO_CHILD)}", pass_args=True)
    busy = echo_rtt([HAPPY, "claude"], {**env, "HAPPY_CLAUDE_PATH": str(loaded), "PYTHONPATH": REPO}, 300)
    print(
        f"  while happy mirrors 500 records/s: p50 {statistics.median(busy):.3f} ms, p99 {pct99(busy):.3f} ms"
    )


def report_startup(tmp: Path, env: dict[str, str]) -> None:
    stamp = tmp / "exec-time"
    started = stand_in(tmp, "start-child", f"sh -c 'date +%s%N > {stamp}; echo STARTED'")
    direct_ms = startup([str(started)], env, stamp, 15)
    happy_ms = startup([HAPPY, "claude"], {**env, "HAPPY_CLAUDE_PATH": str(started)}, stamp, 15)
    print(f"start-up to the child's exec (median of 15): direct {direct_ms:.1f} ms, happy {happy_ms:.1f} ms")
    print(f"  extra {happy_ms - direct_ms:.1f} ms  (target <= 150 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=9, help="alternating throughput rounds")
    parser.add_argument("--throughput-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        home.mkdir()
        env = {**os.environ, "HOME": str(home), "HAPPY_HOME_DIR": str(home), "TERM": "xterm-256color"}
        report_throughput(tmp, env, args.mb, args.runs)
        if args.throughput_only:
            return
        report_echo(tmp, env)
        report_startup(tmp, env)


if __name__ == "__main__":
    main()
