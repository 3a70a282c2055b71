"""Permission requests of the TUI answered from any client (issue 10 §1), with the real bundled
Claude under happy's PTY (`--permission-mode default`) against the fake Messages API: a client
answers before the dialog draws, after it draws, the user answers first, a deny with a reason, and
happy killed while the hook waits."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.control.sockets import short_path
from happy_launcher.home.dirs import socket_path
from tests.e2e.conftest import Launch
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import FakeAnthropic, Reply, Rule, Script, Text, ToolUse
from tests.support.happy_tui import HappyTui, happy_executable, wait_pid_gone

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

COMMAND = "echo hi > written.txt"
DIALOG = "Do you want to proceed"


@pytest.fixture
def script() -> Script:
    call = ToolUse("Bash", {"command": COMMAND, "description": "Write written.txt"})
    rules = [
        Rule(Reply([Text("Writing it."), call]), prompt="write it"),
        Rule(Reply([Text("Done with the tool.")]), tool_result="Bash"),
    ]
    return Script(rules, fallback=Reply([Text("unscripted")]))


@pytest.fixture
def claude_options() -> dict[str, Any]:
    return {"permission_mode": "default", "allow": ()}


@pytest.fixture
def tui(cenv: ClaudeEnv, launch: Launch) -> HappyTui:
    """One `happy claude`, ready."""
    t = launch(cenv)
    t.wait_ready()
    return t


class Watcher:
    """A control client subscribed to the session's permission events (raw socket, JSON lines);
    read without blocking while the test drains the TUI's output."""

    def __init__(self, t: HappyTui) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        with short_path(socket_path(t.home, t.happy_pid())) as address:
            self.sock.connect(address)
        self.sock.setblocking(False)
        self._buffer = b""
        self.lines: list[dict[str, Any]] = []
        self.send({"type": "subscribe", "id": "sub", "after_seq": None})

    def send(self, line: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(line).encode() + b"\n")

    def poll(self) -> list[dict[str, Any]]:
        try:
            while data := self.sock.recv(65536):
                self._buffer += data
        except BlockingIOError:
            pass
        *complete, self._buffer = self._buffer.split(b"\n")
        self.lines += [json.loads(line) for line in complete if line]
        return self.lines

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((line for line in self.poll() if line["type"] == kind), None)

    def wait(self, t: HappyTui, kind: str, timeout: float = 20) -> dict[str, Any]:
        t.wait(lambda: self.first(kind) is not None, timeout, f"a {kind} line on the control socket")
        found = self.first(kind)
        assert found is not None
        return found


def happy(t: HappyTui, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [happy_executable(), *args], env=t.env, cwd=t.cenv.cwd, capture_output=True, text=True, timeout=60
    )


def ran(t: HappyTui) -> bool:
    return (t.cenv.cwd / "written.txt").is_file()


def test_a_client_answers_before_the_dialog_draws(tui: HappyTui) -> None:
    watcher = Watcher(tui)
    mark = len(tui.seen)
    tui.submit("write it")
    request = watcher.wait(tui, "permission-requested")["request"]
    watcher.send({"type": "answer", "id": "a", "request_id": request["id"], "allow": True})
    assert request["tool"] == "Bash" and request["input"]["command"] == COMMAND
    assert request["origin"] == "local"
    tui.wait_turn_end()
    tui.expect_screen("Allowed by PermissionRequest hook", since=mark)
    assert ran(tui)
    # Whether the dialog drew at all is up to Claude: it starts the hook 0.15-1.1 s after the prompt
    # (switching-facts §5; slower on a busy machine) and draws the dialog at about 0.6 s regardless.
    settled = watcher.first("permission-settled")
    assert settled == {"type": "permission-settled", "request_id": request["id"], "outcome": "allowed"}


def test_happy_approve_after_the_dialog_draws(tui: HappyTui) -> None:
    mark = len(tui.seen)
    tui.submit("write it")
    tui.expect_screen(DIALOG, since=mark)
    done = happy(tui, "approve")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("allowed ")
    tui.wait_turn_end()
    assert ran(tui)
    tui.expect_screen("Done with the tool.", since=mark)


def test_the_user_answers_first_in_the_tui(tui: HappyTui, fake: FakeAnthropic) -> None:
    watcher = Watcher(tui)
    mark = len(tui.seen)
    tui.submit("write it")
    request = watcher.wait(tui, "permission-requested")["request"]
    tui.expect_screen("1. Yes", since=mark)
    # The dialog ignores keys for a moment after it draws: Enter until the tool has run.
    for _ in range(10):
        tui.child.send("\r")
        if tui.poll(lambda: ran(tui), 1.0):
            break
    settled = watcher.wait(tui, "permission-settled")
    assert settled["request_id"] == request["id"] and settled["outcome"] == "withdrawn"
    watcher.send({"type": "status", "id": "st"})
    session = watcher.wait(tui, "status")["session"]["happy_session_id"]
    late = happy(tui, "approve", session, request["id"])
    assert late.returncode != 0
    assert f"permission request {request['id']} was withdrawn" in late.stderr
    tui.wait_turn_end()
    assert ran(tui)


def test_happy_deny_with_a_reason_shows_in_the_tui(tui: HappyTui, fake: FakeAnthropic) -> None:
    mark = len(tui.seen)
    tui.submit("write it")
    tui.expect_screen(DIALOG, since=mark)
    done = happy(tui, "deny", "--message", "not now")
    assert done.returncode == 0, done.stderr
    tui.expect_screen("Reason: not now", since=mark)
    tui.expect_screen("Denied by PermissionRequest hook", since=mark)
    tui.wait_turn_end()
    assert not ran(tui)
    results = [r for r in fake.requests if r.rule != "fallback" and "not now" in json.dumps(r.body)]
    assert results, "Claude never told the model why the tool was denied"


def test_happy_killed_while_the_hook_waits(tui: HappyTui) -> None:
    mark = len(tui.seen)
    tui.submit("write it")
    tui.expect_screen(DIALOG, since=mark)
    claude = tui.claude_pid()
    hooks = [pid for pid in children(claude) if b"permission-hook.py" in cmdline(pid)]
    assert len(hooks) == 1, hooks
    os.kill(tui.happy_pid(), signal.SIGKILL)
    assert wait_pid_gone(hooks[0], 5), "the hook outlived happy"
    # Claude was not left waiting on happy: it goes on (here its terminal is gone with happy, so it
    # ends), and never took a decision from the hook.
    assert wait_pid_gone(claude, 10)
    assert not ran(tui)


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
