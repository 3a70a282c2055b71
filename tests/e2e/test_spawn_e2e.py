"""The phone starts and stops a session: Happy's own client, `happy-agent`, as the account, lists
this machine, is refused a directory outside the allowed one (directly, through a symlink, through
`..`), spawns a session in it (the real Claude against the fake API, its happy under the bridge
with no terminal), talks to it, and stops it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from happy_launcher.bridge.keys.credentials import read_machine_id
from happy_launcher.control.sockets import live_sockets
from tests.support import happy_server as peer
from tests.support.claude_env import ClaudeEnv
from tests.support.happy_account import HappyAccount, until
from tests.support.happy_tui import happy_executable

pytestmark = pytest.mark.timeout(240)
HAPPY = happy_executable()
BOUND = 60.0  # seconds any wait may take


def test_the_app_starts_and_stops_a_session(
    happy_server: peer.HappyServer, cenv: ClaudeEnv, account: HappyAccount, home: Path, tmp_path: Path
) -> None:
    agent = account.agent
    allowed, outside = tmp_path / "work", tmp_path / "elsewhere"
    (allowed / "project").mkdir(parents=True)
    outside.mkdir()
    (allowed / "link").symlink_to(outside)
    env = {**cenv.env, **account.env(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    start = [HAPPY, "daemon", "start", "--allow-dir", str(allowed)]
    subprocess.run(start, env=env, check=True, timeout=BOUND, capture_output=True)
    machine_id = read_machine_id(home)
    assert machine_id is not None

    def listed() -> bool:
        return any(m["id"] == machine_id for m in json.loads(agent("machines", "--json")))

    until(listed, BOUND, "this machine listed by happy-agent")
    until(lambda: _rpc_ready(agent, machine_id, allowed), BOUND, "the machine's RPCs registered")
    for refused in (outside, allowed / "link", allowed / ".." / "elsewhere"):
        with pytest.raises(RuntimeError, match=r"not allowed: .* is outside the directories allowed here"):
            agent("spawn", "--machine", machine_id, "--path", str(refused))
    try:
        project = str(allowed / "project")
        spawned = json.loads(agent("spawn", "--machine", machine_id, "--path", project, "--json"))
        assert spawned["type"] == "success", spawned
        happy_id = spawned["sessionId"]
        [pid] = live_sockets(home)
        agent("send", happy_id, "hello from the phone")
        answered = lambda: "Echo: hello from the phone" in agent("history", happy_id, "--json")  # noqa: E731
        until(answered, BOUND, "the spawned session's answer")
        agent("stop", happy_id)
        until(lambda: not _alive(pid), BOUND, "the spawned session ended")
    finally:
        for left in live_sockets(home):  # a failed test leaves no session running
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(left, signal.SIGKILL)


def _rpc_ready(agent: Callable[..., str], machine_id: str, allowed: Path) -> bool:
    """The machine answers a spawn (its RPCs are registered once its socket is up): a refused one."""
    try:
        agent("spawn", "--machine", machine_id, "--path", "relative")
    except RuntimeError as refused:
        return "not an absolute path" in str(refused)
    raise AssertionError(f"a relative directory was not refused (allowed: {allowed})")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
