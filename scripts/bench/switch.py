#!/usr/bin/env python3
"""Switch benchmarks through the real `happy claude` (the bundled Claude, the suite's fake
Messages API on 127.0.0.1), one session switched back and forth `--switches` times:

- local -> remote: a message sent on the control socket -> the SDK's request for it reaches the
  fake API (target <= 1.3 s; measured floor about 1.0 s, switching-facts §2);
- remote -> local: Ctrl-T in the remote screen -> the resumed TUI is ready for input (target
  <= 1.3 s; floor about 1.0 s).
The envelope committed -> `watch` client figure is `scripts/bench_control`'s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.control.client import connect
from happy_launcher.home.dirs import socket_path
from tests.support.claude_env import make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, Script, Text
from tests.support.happy_tui import READY_MARKERS, HappyTui, squeeze


def echo(req: RecordedRequest) -> Reply:
    return Reply([Text("Echo: " + req.last_user_text)])


def send(path: Path, text: str) -> float:
    """Send `text` on the control socket; the wall time just before the request was written."""

    async def go() -> float:
        async with connect(path) as client:
            started = time.time()
            await client.send(str(uuid.uuid4()), text)
            return started

    return anyio.run(go)


def request_time(fake: FakeAnthropic, text: str, t: HappyTui) -> float:
    def found() -> RecordedRequest | None:
        return next((r for r in fake.requests if r.is_messages and r.last_user_text == text), None)

    t.wait(lambda: found() is not None, 30, f"the request for {text!r}")
    req = found()
    assert req is not None
    return req.received_at


def ready_after(t: HappyTui, mark: int) -> float:
    markers = [squeeze(m) for m in READY_MARKERS]
    t.wait(lambda: any(m in squeeze(t.seen[mark:]) for m in markers), 30, "the TUI's input box")
    return time.time()


def run(switches: int) -> tuple[list[float], list[float]]:
    to_remote: list[float] = []
    to_local: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(Script(fallback=echo)) as fake:
        root = Path(tmp)
        cenv = make_claude_env(root, fake.url)
        t = HappyTui(cenv, root / "home", env={"TERM": "xterm"})
        try:
            t.wait_ready()
            path = socket_path(root / "home", t.happy_pid())
            for n in range(switches):
                text = f"hello remote {n}"
                started = send(path, text)
                to_remote.append(request_time(fake, text, t) - started)
                t.wait_turn_end(n + 1)
                mark = len(t.seen)
                pressed = time.time()
                t.child.send("\x14")  # Ctrl-T
                to_local.append(ready_after(t, mark) - pressed)
            t.exit()
        finally:
            t.kill()
    return to_remote, to_local


def figures(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    return f"{name}: median {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms (n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--switches", type=int, default=10)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    to_remote, to_local = run(args.switches)
    print(f"switch benchmark (load {load:.1f}):")
    print("  " + figures("local -> remote, message sent -> SDK request at the API", to_remote))
    print("  " + figures("remote -> local, Ctrl-T -> TUI ready for input", to_local))


if __name__ == "__main__":
    main()
