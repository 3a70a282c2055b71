#!/usr/bin/env python3
"""The soak test over many seeds (issue 16): each seed drives one `happy claude` session (the
real bundled Claude, the suite's fake Messages API) through a random sequence of typed prompts,
sends, injections, switches, aborts, kill -9 / SIGTERM and resumes, then checks every invariant
of tests/support/soak_check.py. Prints one line per seed, then the totals: runs, actions,
messages, lost, duplicated, split sessions, failures (with the seed to replay:
`HAPPY_SOAK_SEED=N pytest tests/test_soak_e2e.py`, or `scripts/soak --seed N -v`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.soak import SoakResult, run_seed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=1, help="how many seeds to run (default 1)")
    parser.add_argument("--seed", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--actions", type=int, default=20, help="actions per seed (default 20)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each action as it runs")
    args = parser.parse_args()
    if args.seeds < 1 or args.actions < 1:
        parser.error("--seeds and --actions must be at least 1")
    load = os.getloadavg()[0]
    print(f"soak: {args.seeds} seed(s) from {args.seed}, {args.actions} actions each (load {load:.1f})")
    results: list[SoakResult] = []
    for seed in range(args.seed, args.seed + args.seeds):
        tmp = Path(tempfile.mkdtemp(prefix=f"soak-{seed}-"))
        result = run_seed(seed, args.actions, tmp, log=print if args.verbose else lambda _: None)
        results.append(result)
        f = result.findings
        state = "ok" if f.ok else "FAILED"
        print(f"seed {seed}: {state}, {len(result.steps) - 1} actions, {f.messages} messages")
        if f.ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(result.report() + f"\n  (its files: {tmp})")
    print_totals(results)
    return 0 if all(r.findings.ok for r in results) else 1


def print_totals(results: list[SoakResult]) -> None:
    failed = [r.seed for r in results if not r.findings.ok]
    rows = [
        ("runs", len(results)),
        ("actions", sum(len(r.steps) - 1 for r in results)),
        ("messages", sum(r.findings.messages for r in results)),
        ("lost", sum(len(r.findings.lost) for r in results)),
        ("duplicated", sum(len(r.findings.duplicated) for r in results)),
        ("split sessions", sum(r.findings.splits for r in results)),
        ("failures", len(failed)),
    ]
    print("\n| " + " | ".join(name for name, _ in rows) + " |")
    print("|" + "---|" * len(rows))
    print("| " + " | ".join(str(value) for _, value in rows) + " |")
    if failed:
        print(
            "failed seeds (replay: HAPPY_SOAK_SEED=N, or scripts/soak --seed N -v): "
            + " ".join(map(str, failed))
        )


if __name__ == "__main__":
    sys.exit(main())
