#!/usr/bin/env python3
"""A whole `happy claude` at rest: the real TUI under a PTY against the fake Messages API, one
turn done, then nothing for `--seconds`: happy's own CPU and wake-ups (voluntary context
switches, all its threads), per second. Claude's are not counted."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.claude_env import make_claude_env  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, Reply, Script, Text  # noqa: E402
from tests.support.happy_tui import HappyTui  # noqa: E402


def usage(pid: int) -> tuple[float, int]:
    """(CPU seconds, voluntary context switches) of every thread of `pid` so far."""
    cpu, switches = 0.0, 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        cpu += int((task / "schedstat").read_text().split()[0]) / 1e9  # ns on the CPU, not ticks
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                switches += int(line.split()[1])
    return cpu, switches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=30, help="how long to watch it rest")
    args = parser.parse_args()
    script = Script(fallback=lambda req: Reply([Text("Echo: " + req.last_user_text)]))
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(script) as fake:
        cenv = make_claude_env(Path(tmp) / "claude", fake.url)
        home = Path(tmp) / "happy"
        home.mkdir()
        tui = HappyTui(cenv, home)
        try:
            tui.wait_ready()
            tui.submit("hello")
            tui.wait_turn_end()
            pid = tui.happy_pid()
            tui.poll(lambda: False, 3)  # the turn's last writes settle (draining the screen)
            cpu0, switches0 = usage(pid)
            tui.poll(lambda: False, args.seconds)  # the measured rest: only the screen is drained
            cpu1, switches1 = usage(pid)
        finally:
            tui.exit()
    print(f"happy claude at rest, {args.seconds:g} s, load {os.getloadavg()[0]:.2f}:")
    print(f"  wake-ups {(switches1 - switches0) / args.seconds:.2f}/s")
    print(f"  CPU      {(cpu1 - cpu0) / args.seconds * 1e3:.3f} ms/s")


if __name__ == "__main__":
    main()
