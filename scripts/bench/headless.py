#!/usr/bin/env python3
"""Headless cost: `happy claude -p PROMPT` vs `claude -p PROMPT`, the real bundled Claude against
the fake Messages API, same machine, same run, interleaved (happy, claude, happy, …).

Wall time is spawn to exit of the command as a script sees it; happy's run mirrors the session
into a fresh store under HAPPY_HOME_DIR, as it always does. Target: median ratio <= 1.15.

CPU time, the figure a busy machine moves least: happy's own (all its threads, not Claude's),
and Claude's, read from the exited process's /proc stat before it is reaped (clock ticks).
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
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.claude_env import make_claude_env  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, Reply, Script, Text  # noqa: E402

HAPPY = str(Path(sys.executable).with_name("happy"))
_TICK = 1 / os.sysconf("SC_CLK_TCK")


class Run(NamedTuple):
    wall: float
    cpu: float  # the process's own CPU time, its threads included
    children_cpu: float  # the CPU time of the children it reaped (Claude, under happy)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: /proc still has it
    elapsed = time.perf_counter() - start
    # The fields after the command's closing parenthesis, from state on: utime is the 12th.
    stat = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()
    utime, stime, cutime, cstime = (int(v) * _TICK for v in stat[11:15])
    out, _ = proc.communicate()
    if proc.returncode != 0 or b"Echo: hello" not in out:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode})")
    return Run(elapsed, utime + stime, cutime + cstime)


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
        happy: list[Run] = []
        claude: list[Run] = []
        for _ in range(args.runs):
            happy.append(timed(happy_cmd, env, cenv.cwd))
            claude.append(timed(claude_cmd, env, cenv.cwd))
    report(happy, claude)


def report(happy: list[Run], claude: list[Run]) -> None:
    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    h, c = ms([r.wall for r in happy]), ms([r.wall for r in claude])
    ratios = statistics.median(a.wall / b.wall for a, b in zip(happy, claude, strict=True))
    print(f"headless `-p hello` (median of {len(happy)} interleaved pairs, load {os.getloadavg()[0]:.2f}):")
    print(f"  claude -p        {c:7.0f} ms")
    print(f"  happy claude -p  {h:7.0f} ms  (+{h - c:.0f} ms)")
    print(f"  ratio            {h / c:7.2f}   (median of per-pair ratios {ratios:.2f}; target <= 1.15)")
    print(
        f"  CPU: happy's own {ms([r.cpu for r in happy]):.0f} ms;"
        f" Claude's {ms([r.cpu for r in claude]):.0f} ms"
        f" direct, {ms([r.children_cpu for r in happy]):.0f} ms under happy"
    )


if __name__ == "__main__":
    main()
