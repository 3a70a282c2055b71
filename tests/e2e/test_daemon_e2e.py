"""`happy daemon start|stop|status` against the real Happy server, as an account the test playing
the app logged in (its token in access.key): connected, refused (one line), stopped by `stop`, by
SIGTERM and by `happy auth logout`; and `happy claude -p` starting it (not with --happy-no-sync,
not without credentials: then not one bridge module is imported) with Claude's output unchanged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from happy_launcher.bridge.keys.credentials import Credentials, write_credentials
from tests.e2e.conftest import Launch
from tests.support.claude_env import ClaudeEnv
from tests.support.control import wait_for_file
from tests.support.happy_app import HappyApp
from tests.support.happy_server import HappyServer
from tests.support.happy_tui import happy_executable, wait_pid_gone

pytestmark = pytest.mark.timeout(90)

HAPPY = happy_executable()
REFUSED = "unauthorized: the server refused the token: run `happy auth login`"


def log_in(home: Path, server: HappyServer, token: str | None = None) -> HappyApp:
    app = HappyApp(server.url)
    write_credentials(home, Credentials(token=token or app.token, variant="legacy", secret=app.secret))
    return app


def happy(home: Path, server: HappyServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HAPPY_HOME_DIR": str(home), "HAPPY_SERVER_URL": server.url}
    return subprocess.run([HAPPY, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def pid_of(said: str) -> int:
    return int(said.split("(pid ")[1].split(")")[0])


def test_start_status_stop(happy_server: HappyServer, home: Path) -> None:
    app = log_in(home, happy_server)
    started = happy(home, happy_server, "daemon", "start")
    assert (started.returncode, started.stderr) == (0, "")
    pid = pid_of(started.stdout)
    assert started.stdout == f"the bridge started (pid {pid}): connected\n"

    status = happy(home, happy_server, "daemon", "status")
    assert status.returncode == 0
    assert status.stdout.splitlines()[:3] == [
        f"running (pid {pid})",
        f"server: {happy_server.url}",
        "state: connected",
    ]
    again = happy(home, happy_server, "daemon", "start")
    assert (again.returncode, again.stdout) == (
        0,
        f"the bridge already runs (pid {pid}): see `happy daemon status`\n",
    )
    assert os.getsid(pid) == pid  # its own session: no terminal's signal reaches it

    stopped = happy(home, happy_server, "daemon", "stop")
    assert (stopped.returncode, stopped.stdout) == (0, f"stopped (pid {pid})\n")
    assert wait_pid_gone(pid, 10)
    after = happy(home, happy_server, "daemon", "status")
    assert after.returncode == 1
    assert after.stdout.startswith("not running (last state: stopped, ")
    assert not (home / "daemon.pid").exists()
    assert (home / "daemon.json").stat().st_mode & 0o777 == 0o600
    for name in ("daemon.log", "daemon.json"):  # the token never written but in access.key
        assert app.token not in (home / name).read_text()
    assert happy(home, happy_server, "daemon", "stop").stdout == "not running\n"


def test_logout_stops_the_bridge(happy_server: HappyServer, home: Path) -> None:
    """The bridge keeps the token it read at start: logging out ends it too."""
    log_in(home, happy_server)
    pid = pid_of(happy(home, happy_server, "daemon", "start").stdout)
    done = happy(home, happy_server, "auth", "logout")
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"logged out (removed {home / 'access.key'}); the bridge stopped (pid {pid})\n",
        "",
    )
    assert wait_pid_gone(pid, 10)
    assert happy(home, happy_server, "daemon", "status").returncode == 1
    assert happy(home, happy_server, "auth", "logout").stdout == "not logged in: nothing to remove\n"


def test_a_refused_token_is_one_line_in_status(happy_server: HappyServer, home: Path) -> None:
    log_in(home, happy_server, token="not-a-token-of-this-server")
    started = happy(home, happy_server, "daemon", "start")
    assert started.returncode == 0
    assert started.stdout == f"the bridge started (pid {pid_of(started.stdout)}): {REFUSED}\n"
    status = happy(home, happy_server, "daemon", "status")
    assert status.returncode == 0
    assert f"state: {REFUSED}" in status.stdout.splitlines()
    as_json = json.loads(happy(home, happy_server, "daemon", "status", "--json").stdout)
    assert (as_json["running"], as_json["state"]) == (True, "unauthorized")
    log = (home / "daemon.log").read_text()
    assert log.count(REFUSED) == 1
    assert "not-a-token-of-this-server" not in log


def test_sigterm_stops_it_cleanly(happy_server: HappyServer, home: Path) -> None:
    log_in(home, happy_server)
    pid = pid_of(happy(home, happy_server, "daemon", "start").stdout)
    os.kill(pid, signal.SIGTERM)
    assert wait_pid_gone(pid, 10)
    assert not (home / "daemon.pid").exists()
    assert json.loads((home / "daemon.json").read_text())["state"] == "stopped"
    assert "stopping on SIGTERM" in (home / "daemon.log").read_text()
    assert happy(home, happy_server, "daemon", "status").returncode == 1


def test_not_logged_in_is_one_line(happy_server: HappyServer, home: Path) -> None:
    done = happy(home, happy_server, "daemon", "start")
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "happy: not logged in: run `happy auth login`\n",
    )
    assert sorted(p.name for p in home.iterdir()) == []


def claude_p(
    cenv: ClaudeEnv, home: Path, server: HappyServer, *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    env |= {"HAPPY_SERVER_URL": server.url, **(env_extra or {})}
    argv = [HAPPY, "claude", *args, "-p", "hello"]
    return subprocess.run(
        argv, env=env, cwd=cenv.cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=60
    )


def test_happy_claude_starts_the_bridge_when_logged_in(
    cenv: ClaudeEnv, happy_server: HappyServer, home: Path
) -> None:
    log_in(home, happy_server)
    done = claude_p(cenv, home, happy_server)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"Echo: hello\n", b"")
    wait_for_file(home / "daemon.pid", 20)
    assert happy(home, happy_server, "daemon", "status").returncode == 0


def test_happy_claude_in_its_tui_starts_the_bridge(
    cenv: ClaudeEnv, happy_server: HappyServer, home: Path, launch: Launch
) -> None:
    log_in(home, happy_server)
    tui = launch(cenv, env={"HAPPY_SERVER_URL": happy_server.url})
    tui.wait_ready()
    wait_for_file(home / "daemon.pid", 20)
    tui.submit("hi")
    tui.wait_turn_end()
    assert tui.exit() == 0
    status = happy(home, happy_server, "daemon", "status")  # it outlives the session
    assert status.returncode == 0
    assert "state: connected" in status.stdout.splitlines()


@pytest.mark.parametrize("logged_in", [True, False], ids=["no-sync", "not-logged-in"])
def test_happy_claude_starts_no_bridge_when_told_not_to_or_logged_out(
    cenv: ClaudeEnv, happy_server: HappyServer, home: Path, logged_in: bool
) -> None:
    if logged_in:
        log_in(home, happy_server)
    no_sync = ["--happy-no-sync"] if logged_in else []
    done = claude_p(cenv, home, happy_server, *no_sync, env_extra={"PYTHONPROFILEIMPORTTIME": "1"})
    assert (done.returncode, done.stdout) == (0, b"Echo: hello\n")
    # happy claude spawns the bridge itself (and opens its log) before Claude ends: none here.
    assert not {"daemon.log", "daemon.pid", "daemon.lock"} & {p.name for p in home.iterdir()}
    lines = done.stderr.decode().splitlines()
    assert lines and all(line.startswith("import time:") for line in lines)  # nothing else said
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines}
    assert "happy_launcher.runner.start" in imported  # the profile is of the whole run
    bridge_side = ("happy_launcher.bridge", "httpx", "nacl", "socketio", "cryptography")
    assert not {name for name in imported if name.startswith(bridge_side)}
