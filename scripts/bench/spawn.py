#!/usr/bin/env python3
"""A session started from the phone, measured against the real Happy server (built and started
here) as one account, the real daemon (`happy daemon start`) and the real Claude against the fake
API:

- spawn: `happy-agent spawn` -> the daemon's answer; the daemon logs, per spawn, the time from the
  RPC's arrival to the new session's control socket answering (it can take a prompt) and to its
  answer (the session registered on the server and linked): p50/p99 over --runs; happy-agent's
  own wall time (a Node process and its socket) beside them;
- the floor: Claude's own start-up, `claude -p hello` against the same fake API, interleaved with
  the spawns (p50).

Each spawned session is stopped (`happy-agent stop`) before the next, so one runs at a time."""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.bridge.keys.credentials import read_machine_id
from tests.support import happy_server as peer
from tests.support.claude_env import ClaudeEnv, make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, Reply, Script, Text
from tests.support.happy_account import HappyAccount, until
from tests.support.happy_tui import happy_executable

BOUND = 60.0
_LOGGED = re.compile(r"spawned session \S+: its socket answered in (\d+) ms, linked as \S+ in (\d+) ms")


def spawn_once(
    account: HappyAccount, machine_id: str, project: Path, log: Path
) -> tuple[float, float, float]:
    """(socket answered, linked, happy-agent's wall) in ms; the session is stopped again."""
    seen = len(_LOGGED.findall(log.read_text()))
    began = time.perf_counter()
    answer = json.loads(account.agent("spawn", "--machine", machine_id, "--path", str(project), "--json"))
    wall = (time.perf_counter() - began) * 1000
    if answer.get("type") != "success":
        raise SystemExit(f"spawn failed: {answer}")
    logged = until(lambda: _LOGGED.findall(log.read_text())[seen:], BOUND, "the daemon's log of the spawn")
    account.agent("stop", answer["sessionId"])
    up, linked = (float(v) for v in logged[0])
    return up, linked, wall


def claude_alone(cenv: ClaudeEnv) -> float:
    began = time.perf_counter()
    subprocess.run(
        [str(cenv.binary), "-p", "hello"], env=cenv.env, cwd=cenv.cwd, check=True, capture_output=True
    )
    return (time.perf_counter() - began) * 1000


def until_stopped(home: Path) -> None:
    """No spawned session left running (the last stop's SIGTERM done)."""
    until(lambda: not list((home / "spawned").glob("*.json")), BOUND, "the spawned sessions stopped")


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="spawns (default 20)")
    args = parser.parse_args()
    dest = peer.build()
    script = Script(fallback=lambda req: Reply([Text("Echo: " + req.last_user_text)]))
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(script) as fake:
        root = Path(tmp)
        server = peer.start(dest, root / "server")
        home, project = root / "happy", root / "work"
        home.mkdir()
        project.mkdir()
        try:
            account = HappyAccount(dest, server, root / "account")
            account.log_in(home)
            cenv = make_claude_env(root / "claude", fake.url)
            env = {**os.environ, **cenv.env, **account.env(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
            start = [happy_executable(), "daemon", "start", "--allow-dir", str(project)]
            subprocess.run(start, env=env, check=True, capture_output=True, timeout=BOUND)
            machine_id = read_machine_id(home)
            assert machine_id is not None
            until(lambda: _answers(account, machine_id), BOUND, "the machine's RPCs registered")
            log = home / "daemon.log"
            spawn_once(account, machine_id, project, log)  # warm-up: page cache, .pyc files
            claude_alone(cenv)
            spawns, floor = [], []
            for _ in range(args.runs):
                until_stopped(home)
                spawns.append(spawn_once(account, machine_id, project, log))
                floor.append(claude_alone(cenv))
        finally:
            account.stop_daemon(home)
            peer.stop(server)
    report(spawns, floor)


def _answers(account: HappyAccount, machine_id: str) -> bool:
    try:
        account.agent("spawn", "--machine", machine_id, "--path", "relative")
    except RuntimeError as refused:
        return "not an absolute path" in str(refused)
    return False


def report(spawns: list[tuple[float, float, float]], floor: list[float]) -> None:
    up, linked, wall = ([s[n] for s in spawns] for n in range(3))
    print(f"spawn from the phone (n={len(spawns)}, one at a time, load {os.getloadavg()[0]:.1f}):")
    print(f"  RPC -> control socket answers   p50 {p(up, 0.5):6.0f} ms  p99 {p(up, 0.99):6.0f} ms")
    print(f"  RPC -> answered (linked)        p50 {p(linked, 0.5):6.0f} ms  p99 {p(linked, 0.99):6.0f} ms")
    print(f"  happy-agent spawn, wall         p50 {p(wall, 0.5):6.0f} ms  p99 {p(wall, 0.99):6.0f} ms")
    print(f"  floor: claude -p hello alone    p50 {statistics.median(floor):6.0f} ms")


if __name__ == "__main__":
    main()
