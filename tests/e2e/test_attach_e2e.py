"""`happy attach`: a session started without a terminal (as the spawner starts one for the phone)
taken into Claude's TUI in a terminal, handed back with Ctrl-T, taken again and handed back by a
hang-up; the real Claude against the fake API, five Claude starts in all."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from happy_launcher.claude.paths import project_dir
from happy_launcher.control.sockets import live_sockets
from happy_launcher.spawn.dirs import configure
from happy_launcher.store.sessions import DB_NAME, SessionStore
from tests.e2e.conftest import Launch
from tests.support.claude_env import ClaudeEnv
from tests.support.happy_account import until
from tests.support.happy_tui import HappyTui, happy_executable, wait_pid_gone

pytestmark = pytest.mark.timeout(180)
HAPPY = happy_executable()
BOUND = 60.0


@pytest.fixture
def env(cenv: ClaudeEnv, home: Path) -> Iterator[dict[str, str]]:
    """happy's environment; every happy left running under `home` is killed at the end."""
    yield {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    for pid in live_sockets(home):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def start_detached(env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    """As the spawner starts a session: `happy claude --happy-remote` in its own session, no
    terminal, stdin a pipe that stays open, its output in `log`."""
    read, write = os.pipe()
    try:
        with log.open("ab") as out:
            return subprocess.Popen(
                [HAPPY, "claude", "--happy-remote"], stdin=read, stdout=out, stderr=out,
                cwd=cwd, env=env, start_new_session=True, pass_fds=(write,),
            )  # fmt: skip
    finally:
        os.close(read)
        os.close(write)


def happy(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([HAPPY, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=BOUND)
    assert done.returncode == 0, done.stderr
    return done.stdout


def detached_pid(env: dict[str, str], cwd: Path) -> int | None:
    """The one running session's pid once it answers without a terminal, in remote mode."""
    rows = [orjson.loads(line) for line in happy(env, cwd, "sessions", "--json").splitlines()]
    up = [r for r in rows if r["state"] == "running" and r["mode"] == "remote" and r["terminal"] is False]
    return up[0]["pid"] if len(up) == 1 else None


def envelopes(home: Path) -> list[tuple[int, dict[str, Any]]]:
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
        return [(seq, orjson.loads(body)) for seq, body in store.raw_envelopes(session.id)]


def texts(home: Path, role: str) -> list[str]:
    return [e["ev"]["text"] for _, e in envelopes(home) if e["ev"]["t"] == "text" and e["role"] == role]


def answered(home: Path, text: str) -> bool:
    return (home / DB_NAME).exists() and f"Echo: {text}" in texts(home, "agent")


def test_attach_takes_a_detached_session_into_the_tui_and_ctrl_t_or_a_hang_up_hands_it_back(
    cenv: ClaudeEnv, home: Path, env: dict[str, str], launch: Launch
) -> None:
    cwd = cenv.cwd
    configure(home, Path.home(), [str(cwd)], None)  # as `happy daemon start --allow-dir` keeps it
    phone = start_detached(env, cwd, home / "phone.log")
    first = until(lambda: detached_pid(env, cwd), BOUND, "the detached session's control socket")
    assert first == phone.pid
    happy(env, cwd, "send", "hello from the phone")
    until(lambda: answered(home, "hello from the phone"), BOUND, "the detached session's answer")

    tui: HappyTui = launch(cenv, command=["attach"])
    assert phone.wait(BOUND) == 128 + signal.SIGTERM  # the detached run was ended for the TUI
    tui.wait_ready()
    tui.expect_screen("Echo: hello from the phone")  # the TUI shows the conversation so far
    tui.submit("hello at the desk")
    tui.expect_screen("Echo: hello at the desk")
    until(lambda: answered(home, "hello at the desk"), BOUND, "the TUI's answer in the store")
    tui.child.send("\x14")  # Ctrl-T: hand it back
    assert tui.wait_exit(BOUND) == 0
    assert tui.on_screen("runs on without a terminal")

    until(lambda: detached_pid(env, cwd), BOUND, "the session detached again")
    happy(env, cwd, "send", "hello again from the phone")
    until(lambda: answered(home, "hello again from the phone"), BOUND, "the answer after the hand-back")

    closing: HappyTui = launch(cenv, command=["attach"])  # taken again, then the terminal hangs up
    closing.wait_ready()
    os.kill(closing.happy_pid(), signal.SIGHUP)
    assert closing.wait_exit(BOUND) == 0
    last = until(lambda: detached_pid(env, cwd), BOUND, "the session detached after the hang-up")
    happy(env, cwd, "send", "hello after the hang-up")
    until(lambda: answered(home, "hello after the hang-up"), BOUND, "the answer after the hang-up")
    os.kill(last, signal.SIGTERM)
    assert wait_pid_gone(last, BOUND)

    sent = [
        "hello from the phone",
        "hello at the desk",
        "hello again from the phone",
        "hello after the hang-up",
    ]
    assert texts(home, "user") == sent
    assert texts(home, "agent") == [f"Echo: {text}" for text in sent]
    stored = envelopes(home)
    assert [seq for seq, _ in stored] == list(range(stored[0][0], stored[0][0] + len(stored)))
    ids = [e["id"] for _, e in stored]
    assert len(ids) == len(set(ids))
    with contextlib.closing(sqlite3.connect(home / DB_NAME)) as db:
        claude_ids = {row[0] for row in db.execute("SELECT claude_session_id FROM claude_sessions")}
    [transcript] = project_dir(cenv.env, cwd).glob("*.jsonl")
    assert claude_ids == {transcript.stem}
