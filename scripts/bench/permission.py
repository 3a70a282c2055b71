#!/usr/bin/env python3
"""What the TUI's PermissionRequest hook (issue 10 §1) costs when no client is attached.

1. The hook process, run as Claude runs it (`sh -c <overlay command>`) against the real control
   server (a fake session that withdraws the request as soon as it is pending, as the user's answer
   in the TUI does): wall time from spawn to exit and CPU time (user + sys), next to a bare
   `python -S -I -c pass` and `sh -c true`.
2. The bundled Claude in its TUI (fake Messages API, `--permission-mode default`), with and without
   the hook in its `--settings`, rounds alternating: prompt `\\r` -> permission dialog on screen (a
   Bash call that needs permission: the hook runs), and prompt `\\r` -> the tool's result at the API
   (an allowed Bash call: the hook does not run).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.from_thread
import pexpect

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.control.fake import FakeController
from happy_launcher.control.server import serve
from happy_launcher.local import permission_hook
from happy_launcher.local.hooks import PERMISSION_HOOK_TIMEOUT_S, permission_hook_command
from happy_launcher.session.ports import PermissionAnswer, PermissionRequest
from tests.support.claude_env import ClaudeEnv, make_claude_env
from tests.support.control import facts
from tests.support.fake_anthropic import FakeAnthropic, Reply, Rule, Script, Text, ToolUse
from tests.support.happy_tui import READY_MARKERS, squeeze

SCRIPT = Path(permission_hook.__file__)
PAYLOAD = json.dumps(
    {"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "touch x"}}
).encode()


class Withdrawing:
    def __init__(self, controller: FakeController) -> None:
        self.controller = controller

    def requested(self, request: PermissionRequest) -> None:
        self.controller.settle(request.id, None)

    def settled(self, request_id: str, answer: PermissionAnswer | None) -> None:
        pass


def timed_child(argv: list[str], stdin: bytes) -> tuple[float, float]:
    """Wall and CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def hook_process(runs: int, home: Path) -> None:
    controller = FakeController(facts())
    controller.watch_permissions(Withdrawing(controller))
    with anyio.from_thread.start_blocking_portal() as portal:
        server, path = portal.start_task(serve, controller, home)
        cases: dict[str, list[str]] = {
            "hook (asks, withdrawn)": ["sh", "-c", permission_hook_command(SCRIPT, path)],
            "python -S -I -c pass": ["sh", "-c", f"exec {sys.executable} -S -I -c pass"],
            "sh -c true": ["sh", "-c", "true"],
        }
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, argv in cases.items():
                results[name].append(timed_child(argv, PAYLOAD))
        server.cancel()
    print(f"1. the hook process (median of {runs}):")
    for name, rows in results.items():
        wall = statistics.median(w for w, _ in rows) * 1000
        cpu = statistics.median(c for _, c in rows) * 1000
        print(f"   {name:<24} wall {wall:6.1f} ms   cpu {cpu:6.1f} ms")


def claude_latencies(rounds: int, root: Path) -> None:
    ask = ToolUse("Bash", {"command": "touch asked.txt", "description": "Touch it"})
    allowed = ToolUse("Bash", {"command": "echo allowed", "description": "Echo it"})
    rules = [
        Rule(Reply([Text("Asking."), ask]), prompt="needs permission"),
        Rule(Reply([Text("Running."), allowed]), prompt="allowed call"),
        Rule(Reply([Text("Done.")]), tool_result="Bash"),
    ]
    controller = FakeController(facts())  # no client: a request stays pending until the hook dies
    with (
        FakeAnthropic(Script(rules, fallback=Reply([Text("?")]))) as fake,
        anyio.from_thread.start_blocking_portal() as portal,
    ):
        server, path = portal.start_task(serve, controller, root / "home")
        cenv = make_claude_env(root / "claude", fake.url, permission_mode="default", allow=("Bash(echo:*)",))
        hook = {"type": "command", "command": permission_hook_command(SCRIPT, path)}
        with_hook = {
            "hooks": {"PermissionRequest": [{"hooks": [{**hook, "timeout": PERMISSION_HOOK_TIMEOUT_S}]}]}
        }
        settings = {"without hook": "{}", "with hook": json.dumps(with_hook)}
        dialog: dict[str, list[float]] = {name: [] for name in settings}
        tool: dict[str, list[float]] = {name: [] for name in settings}
        for _ in range(rounds):
            for name, value in settings.items():
                dialog[name].append(
                    _one(cenv, value, "needs permission", lambda t: "Doyouwanttoproceed" in t)
                )
                before = len(fake.requests)
                tool[name].append(
                    _one(
                        cenv,
                        value,
                        "allowed call",
                        functools.partial(_answered, fake, before),
                    )
                )
        server.cancel()
    print(f"2. the bundled Claude (median of {rounds} alternating rounds):")
    for name in settings:
        print(
            f"   {name:<13} \\r -> dialog drawn {statistics.median(dialog[name]) * 1000:6.0f} ms"
            f"   \\r -> allowed tool's result at the API {statistics.median(tool[name]) * 1000:6.0f} ms"
        )
    ratio = statistics.median(dialog["with hook"]) / statistics.median(dialog["without hook"])
    print(f"   ratio with / without, dialog: {ratio:.2f}")


def _answered(fake: FakeAnthropic, before: int, _screen: str) -> bool:
    return any(r.tool_use_ids for r in fake.requests[before:])


def _one(cenv: ClaudeEnv, settings: str, prompt: str, done: Callable[[str], bool]) -> float:
    argv = ["--settings", settings]
    child = pexpect.spawn(str(cenv.binary), argv, cwd=str(cenv.cwd), env=cenv.env, dimensions=(40, 120))
    seen = ""
    try:
        seen = _until(child, seen, lambda t: any(squeeze(m) in t for m in READY_MARKERS))
        child.send(prompt)
        seen = _until(child, seen, lambda t: squeeze(prompt) in t)
        mark = len(seen)
        started = time.perf_counter()
        child.send("\r")
        _until(child, seen, lambda t: done(t[mark:]))
        return time.perf_counter() - started
    finally:
        child.close(force=True)


def _until(child: pexpect.spawn, seen: str, cond: Callable[[str], bool], timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    text = squeeze(seen)
    while not cond(text):
        if time.monotonic() > deadline:
            raise TimeoutError(text[-500:])
        with contextlib.suppress(pexpect.TIMEOUT):
            seen += child.read_nonblocking(65536, timeout=0.02).decode("utf-8", "replace")
        text = squeeze(seen)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20, help="hook process runs per case")
    parser.add_argument("--rounds", type=int, default=5, help="Claude runs per case and metric")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        hook_process(args.runs, Path(tmp) / "h")
        claude_latencies(args.rounds, Path(tmp))


if __name__ == "__main__":
    main()
