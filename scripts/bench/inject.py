#!/usr/bin/env python3
"""Inject benchmark through the real `happy claude` (the bundled Claude, the suite's fake
Messages API on 127.0.0.1): a message sent with mode `inject` on the control socket -> Claude's
UserPromptSubmit hook starts (a hook of the user's own, merged into happy's overlay, writes the
time it starts), `--count` times on one idle session. Measured floor for Enter -> hook start:
15-135 ms (switching-facts §4); on top of it, inject reads the screen (Claude redraws it after a
one-column resize and back), holds the keys, and types in 100-character chunks 20 ms apart.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.control.client import connect
from happy_launcher.home.dirs import socket_path
from scripts.bench.switch import echo, figures
from tests.support.claude_env import make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, Script
from tests.support.happy_tui import HappyTui


def inject(path: Path, text: str) -> float:
    """Send `text` to be injected; the wall time just before the request was written."""

    async def go() -> float:
        async with connect(path) as client:
            started = time.time()
            await client.send(str(uuid.uuid4()), text, "inject")
            return started

    return anyio.run(go)


def run(count: int) -> list[float]:
    samples: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(Script(fallback=echo)) as fake:
        root = Path(tmp)
        cenv = make_claude_env(root, fake.url)
        stamps = root / "submitted.txt"
        hook = {"type": "command", "command": f"date +%s.%N >> '{stamps}'"}
        settings = json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}})
        t = HappyTui(cenv, root / "home", ["--settings", settings], env={"TERM": "xterm"})
        try:
            t.wait_ready()
            t.submit("warm up")  # the session's first prompt is slower (switching-facts §4)
            t.wait_turn_end(1)
            path = socket_path(root / "home", t.happy_pid())
            for n in range(count):
                started = inject(path, f"hello injected {n}")
                # The warm-up's stamp, then one per injection.
                t.wait(partial(_has_stamps, stamps, n + 2), 30, "the UserPromptSubmit hook")
                samples.append(float(stamps.read_text().split()[n + 1]) - started)
                t.wait_turn_end(n + 2)
            t.exit()
        finally:
            t.kill()
    return samples


def _has_stamps(path: Path, count: int) -> bool:
    try:
        return len(path.read_text().split()) >= count
    except FileNotFoundError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=20)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    samples = run(args.count)
    print(f"inject benchmark (load {load:.1f}):")
    print("  " + figures("happy send --inject -> UserPromptSubmit hook starts", samples))


if __name__ == "__main__":
    main()
