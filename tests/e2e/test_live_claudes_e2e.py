"""The busy-session guard against the real bundled Claude (fake Messages API): while a TUI (under a PTY) or
an SDK session runs on session S the guard names it; once it exits, cleanly or killed, the guard reports
nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pexpect
import pytest
from claude_agent_sdk import ClaudeSDKClient

from happy_launcher.claude.args import parse_happy_claude_args
from happy_launcher.errors import SessionBusyError
from happy_launcher.home.live_claudes import ensure_not_busy, registry_dir, session_holder
from happy_launcher.home.procs import start_time
from happy_launcher.remote.options import remote_options
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import Reply, Script, Text
from tests.support.happy_tui import happy_executable

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


@pytest.fixture
def script() -> Script:
    return Script(fallback=Reply([Text("OK")]))


@pytest.fixture
def claude_options() -> dict[str, Any]:
    # CLAUDE_CONFIG_DIR set explicitly: the SDK lays `env` over the test process's own environment.
    return {"use_config_dir": True}


@contextmanager
def claude_tui(cenv: ClaudeEnv, session_id: str) -> Iterator[Any]:
    child: Any = pexpect.spawn(
        str(cenv.binary), ["--session-id", session_id], cwd=str(cenv.cwd), env=cenv.env, dimensions=(40, 120)
    )
    try:
        yield child
    finally:
        if child.isalive():
            child.kill(signal.SIGKILL)
        child.close(force=True)


def drain_until(child: Any, cond: Callable[[], bool], timeout: float, what: str) -> None:
    """Read the TUI's output (it must not block on a full PTY) until ``cond()`` holds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        try:
            child.read_nonblocking(65536, timeout=0.05)
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            assert cond(), f"claude exited before {what}"


def test_guard_names_a_live_tui_and_forgets_it_after_exit(cenv: ClaudeEnv) -> None:
    registry = registry_dir(cenv.env)
    sid = str(uuid.uuid4())
    with claude_tui(cenv, sid) as tui:
        drain_until(tui, lambda: session_holder(registry, sid) is not None, 30, "the registry entry")
        holder = session_holder(registry, sid)
        assert holder is not None
        assert (holder.pid, holder.cwd, holder.entrypoint) == (tui.pid, str(cenv.cwd), "cli")
        # procStart is the start time in /proc (clock ticks after boot), as a decimal string.
        assert json.loads((registry / f"{tui.pid}.json").read_text())["procStart"] == str(start_time(tui.pid))
        with pytest.raises(SessionBusyError, match=f"pid {tui.pid}"):
            ensure_not_busy(registry, sid)
        assert session_holder(registry, sid, ours={tui.pid}) is None
        assert session_holder(registry, str(uuid.uuid4())) is None
        # `happy claude --resume S` refuses in one line, before Claude or the store is touched.
        happy_env = {
            **cenv.env,
            "HAPPY_HOME_DIR": str(cenv.root / "happy"),
            "HAPPY_CLAUDE_PATH": str(cenv.binary),
        }
        refused = subprocess.run(
            [happy_executable(), "claude", "--resume", sid, "-p", "hi"],
            env=happy_env,
            cwd=cenv.cwd,
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert refused.returncode == 1 and refused.stdout == b""
        assert refused.stderr.decode().splitlines() == [
            f"happy: Claude session {sid} is already open in another claude process "
            f"(pid {tui.pid}, in {cenv.cwd}): close it first, or continue the session there"
        ]
        assert not (cenv.root / "happy").exists()

        tui.kill(signal.SIGTERM)  # a clean exit: Claude removes its entry
        tui.expect(pexpect.EOF, timeout=30)
        tui.wait()
    assert not (registry / f"{tui.pid}.json").exists()
    assert session_holder(registry, sid) is None


def test_guard_ignores_the_entry_a_killed_tui_leaves(cenv: ClaudeEnv) -> None:
    registry = registry_dir(cenv.env)
    sid = str(uuid.uuid4())
    with claude_tui(cenv, sid) as tui:
        drain_until(tui, lambda: session_holder(registry, sid) is not None, 30, "the registry entry")
        tui.kill(signal.SIGKILL)
        tui.wait()  # reaped: its pid names no process now
    assert (registry / f"{tui.pid}.json").exists()  # left behind: stale
    assert session_holder(registry, sid) is None
    ensure_not_busy(registry, sid)


@pytest.mark.anyio
async def test_guard_names_a_live_sdk_session(cenv: ClaudeEnv) -> None:
    registry = registry_dir(cenv.env)
    sid = str(uuid.uuid4())
    built = remote_options(
        parse_happy_claude_args([]),
        binary=cenv.binary,
        cwd=cenv.cwd,
        env=cenv.env,
        session_id=sid,
        resume=False,
    )
    with anyio.fail_after(60):
        async with ClaudeSDKClient(built.options) as client:
            await client.query("hello")
            async for _ in client.receive_response():
                pass
            holder = session_holder(registry, sid)
            assert holder is not None and holder.entrypoint == "sdk-py"
    assert session_holder(registry, sid) is None  # disconnect() ends Claude cleanly
