#!/usr/bin/env python3
"""How cold this machine leaves a process that sleeps: the CPU time of the same small piece of work
(reading one byte from each of `--pages` pages of 4 KB spread over 64 MB) right after sleeping for
each gap. On a machine whose CPUs keep their caches while idle the figures are flat; on one whose
vCPUs halt at once (a Firecracker VM here) they grow with the gap, as the mirror's CPU per record
does (`latency.py --gap`). Medians of `--rounds` wake-ups per gap. Not a product figure: it says
how much of one is the machine's."""

from __future__ import annotations

import argparse
import os
import statistics
import time

GAPS = (0.0005, 0.002, 0.01, 0.05, 0.2)  # seconds asleep before the work
SPAN = 64 << 20


def woken_cost(buf: bytearray, pages: int, gap: float, rounds: int) -> float:
    """Median µs of CPU to touch `pages` pages of `buf`, each time right after sleeping `gap` s."""
    step = SPAN // pages
    costs = []
    for _ in range(rounds):
        time.sleep(gap)  # the gap is what is measured, not a wait for anything
        start = time.thread_time_ns()
        total = 0
        for at in range(0, SPAN, step):
            total += buf[at]
        costs.append((time.thread_time_ns() - start) / 1e3)
    return statistics.median(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=256, help="pages touched after each wake-up")
    parser.add_argument("--rounds", type=int, default=40, help="wake-ups per gap")
    args = parser.parse_args()
    buf = bytearray(b"\x01") * SPAN  # written whole: every page backed before the first measure
    cells = [f"{gap * 1e3:g} ms: {woken_cost(buf, args.pages, gap, args.rounds):.1f} µs" for gap in GAPS]
    print(f"CPU to touch {args.pages} pages after sleeping (median of {args.rounds}):")
    print("  " + "  ".join(cells))
    print(f"  (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
