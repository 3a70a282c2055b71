#!/usr/bin/env python3
"""Headless cost: `happy claude -p PROMPT` vs `claude -p PROMPT`, the real bundled Claude against
the fake Messages API, same machine, same run, interleaved (happy, claude, happy, …).

Wall time is spawn to exit of the command as a script sees it; happy's run mirrors the session
into a fresh store under HAPPY_HOME_DIR, as it always does. Target: median ratio <= 1.15.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.claude_env import make_claude_env  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, Reply, Script, Text  # noqa: E402

HAPPY = str(Path(sys.executable).with_name("happy"))


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or b"Echo: hello" not in done.stdout:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="pairs of runs (default 15)")
    args = parser.parse_args()
    script = Script(fallback=lambda req: Reply([Text("Echo: " + req.last_user_text)]))
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(script) as fake:
        cenv = make_claude_env(Path(tmp) / "claude", fake.url)
        env = {**cenv.env, "HAPPY_HOME_DIR": str(Path(tmp) / "happy"), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
        happy_cmd, claude_cmd = [HAPPY, "claude", "-p", "hello"], [str(cenv.binary), "-p", "hello"]
        timed(happy_cmd, env, cenv.cwd)  # warm-up: page cache, .pyc files, the store's creation
        timed(claude_cmd, env, cenv.cwd)
        happy, claude = [], []
        for _ in range(args.runs):
            happy.append(timed(happy_cmd, env, cenv.cwd))
            claude.append(timed(claude_cmd, env, cenv.cwd))
    h, c = statistics.median(happy), statistics.median(claude)
    ratios = statistics.median(a / b for a, b in zip(happy, claude, strict=True))
    print(f"headless `-p hello` (median of {args.runs} interleaved pairs, load {os.getloadavg()[0]:.2f}):")
    print(f"  claude -p        {c * 1000:7.0f} ms")
    print(f"  happy claude -p  {h * 1000:7.0f} ms  (+{(h - c) * 1000:.0f} ms)")
    print(f"  ratio            {h / c:7.2f}   (median of per-pair ratios {ratios:.2f}; target <= 1.15)")


if __name__ == "__main__":
    main()
