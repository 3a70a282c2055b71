"""The phone starts, stops and resumes a session: Happy's own client, `happy-agent`, as the account,
lists this machine with what it offers (resume, Claude, the allowed directory), is refused a
directory outside the allowed one (directly, through a symlink, through `..`), spawns a session in
it (the real Claude against the fake API, its happy under the bridge with no terminal), talks to
it, stops it with its turn closed, resumes it (the same Claude conversation, its history kept) and
talks to it again. The page's way in, a start with a first prompt, answers that prompt, and the
daemon stops that session too (the registry on disk is everyone's)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.bridge.keys.credentials import read_machine_id
from happy_launcher.control.sockets import live_sockets
from happy_launcher.spawn.spawner import SpawnRequest, Started, spawner_for
from happy_launcher.store.layout import DATA_DIR_NAME
from happy_launcher.store.sessions import SessionStore
from tests.support import happy_server as peer
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import Reply, Script, Text
from tests.support.happy_account import HappyAccount, until
from tests.support.happy_tui import happy_executable, wait_pid_gone

pytestmark = pytest.mark.timeout(240)
HAPPY = happy_executable()
BOUND = 60.0  # seconds any wait may take
SLOW = 20.0  # seconds the fake API takes over a turn the test stops in its middle


def test_the_app_starts_stops_and_resumes_a_session(
    happy_server: peer.HappyServer,
    script: Script,
    cenv: ClaudeEnv,
    account: HappyAccount,
    home: Path,
    tmp_path: Path,
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

    def listed() -> dict[str, Any] | None:
        return next((m for m in json.loads(agent("machines", "--json")) if m["id"] == machine_id), None)

    metadata = until(listed, BOUND, "this machine listed by happy-agent")["metadata"]
    assert metadata["resumeSupport"]["rpcAvailable"] is True
    assert metadata["cliAvailability"]["claude"] is True
    assert metadata["allowedDirectories"] == [str(allowed.resolve())]
    until(lambda: _rpc_ready(agent, machine_id, allowed), BOUND, "the machine's RPCs registered")
    for refused in (outside, allowed / "link", allowed / ".." / "elsewhere"):
        with pytest.raises(RuntimeError, match=r"not allowed: .* is outside the directories allowed here"):
            agent("spawn", "--machine", machine_id, "--path", str(refused))
    try:
        project = str(allowed / "project")
        spawned = json.loads(agent("spawn", "--machine", machine_id, "--path", project, "--json"))
        assert spawned["type"] == "success", spawned
        happy_id = spawned["sessionId"]
        [pid] = [p for p in live_sockets(home) if _alive(p)]
        _talk(agent, home, happy_id, "hello from the phone")
        [before] = _sessions(home)
        agent("stop", happy_id)
        assert wait_pid_gone(pid, BOUND), "the spawned session did not end"
        assert _turn_closed(home, before["id"])
        resumed = json.loads(agent("resume", happy_id, "--json"))
        assert resumed["type"] == "success" and resumed["sessionId"] == happy_id, resumed
        _talk(agent, home, happy_id, "hello again")
        [after] = _sessions(home)  # the same session, the same Claude conversation, its history kept
        assert (after["id"], after["claude"]) == (before["id"], before["claude"])
        assert after["envelopes"][: len(before["envelopes"])] == before["envelopes"]
        assert "Echo: hello again" in json.dumps(after["envelopes"])
        script.on(Reply([Text("Done at last.")], delay=SLOW), prompt="take your time")
        agent("send", happy_id, "take your time")
        asked = lambda: "take your time" in json.dumps(_envelopes(home, before["id"])[-3:])  # noqa: E731
        until(asked, BOUND, "the slow turn under way", changes=home / DATA_DIR_NAME)
        [pid] = [p for p in live_sockets(home) if _alive(p)]
        agent("stop", happy_id)  # in the middle of a turn
        assert wait_pid_gone(pid, BOUND), "the resumed session did not end"
        assert _turn_closed(home, before["id"]), _kinds(home, before["id"])[-6:]
        _first_prompt(home, {**os.environ, **env}, allowed / "project", agent, happy_server.url)
    finally:
        for left in live_sockets(home):  # a failed test leaves no session running
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(left, signal.SIGKILL)


def _first_prompt(
    home: Path, env: Mapping[str, str], directory: Path, agent: Callable[..., str], server: str
) -> None:
    """The page's start (in this process): the first prompt answered; `happy-agent stop` ends it."""

    async def start() -> Started:
        spawner = spawner_for(home, env)
        async with anyio.create_task_group() as tg:
            tg.start_soon(spawner.run)
            started = await spawner.start(SpawnRequest(str(directory), prompt="first words"))
            tg.cancel_scope.cancel()
        return started

    started = anyio.run(start)
    answered = lambda: "Echo: first words" in json.dumps(_envelopes(home, started.session_id))  # noqa: E731
    until(answered, BOUND, "the first prompt's answer", changes=home / DATA_DIR_NAME)
    linked = lambda: _happy_id(home, server, started.session_id)  # noqa: E731
    happy_id = until(linked, BOUND, "the page's session linked", changes=home)
    agent("stop", happy_id)
    assert wait_pid_gone(started.pid, BOUND), "the daemon did not stop the page's session"
    assert _turn_closed(home, started.session_id)


def _talk(agent: Callable[..., str], home: Path, happy_id: str, text: str) -> None:
    """The answer in the store (waited on inotify), then in the server's history (happy-agent)."""
    agent("send", happy_id, text)
    stored = lambda: any(f"Echo: {text}" in json.dumps(s["envelopes"]) for s in _sessions(home))  # noqa: E731
    until(stored, BOUND, f"the answer to {text!r} in the store", changes=home / DATA_DIR_NAME)
    until(lambda: f"Echo: {text}" in agent("history", happy_id, "--json"), BOUND, f"the answer to {text!r}")


def _sessions(home: Path) -> list[dict[str, Any]]:
    with SessionStore.open(home) as store:
        return [
            {"id": info.id, "claude": info.claude_session_id, "envelopes": _envelopes(home, info.id)}
            for info in store.list_sessions()
        ]


def _envelopes(home: Path, session: str) -> list[Any]:
    with SessionStore.open(home) as store:
        return [json.loads(body) for _, body in store.raw_envelopes(session)]


def _happy_id(home: Path, server: str, session: str) -> str | None:
    with SessionStore.open(home) as store:
        link = store.happy_link(session, server.rstrip("/"))
    return link.happy_id if link is not None else None


def _kinds(home: Path, session: str) -> list[str]:
    return [e["ev"]["t"] for e in _envelopes(home, session)]


def _turn_closed(home: Path, session: str) -> bool:
    """A `turn-end` after the last `turn-start`: stopped as `/exit` would."""
    kinds = _kinds(home, session)
    starts = [n for n, kind in enumerate(kinds) if kind == "turn-start"]
    return bool(starts) and "turn-end" in kinds[starts[-1] :]


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
