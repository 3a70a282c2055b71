"""`happy auth login|status|logout` against the real Happy server, the test playing the app that
approves the pairing: both answers (V2, V1) give access.key in the TypeScript CLI's format, 0600,
whose token the server accepts; an unreachable server and Ctrl-C are one line each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from happy_launcher.bridge.keys.crypto import b64, content_keypair
from tests.support.happy_app import HappyApp
from tests.support.happy_server import HappyServer, free_port
from tests.support.happy_tui import happy_executable

HAPPY = happy_executable()


def env(home: Path) -> dict[str, str]:
    return {**os.environ, "HAPPY_HOME_DIR": str(home), "HAPPY_SERVER_URL": "http://127.0.0.1:1"}


def happy(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [HAPPY, *args]
    return subprocess.run(command, env=env(home), capture_output=True, text=True, timeout=30, check=False)


def start_login(home: Path, server: HappyServer) -> tuple[subprocess.Popen[str], str]:
    """`happy auth login` running, and the link it shows once the server holds its request."""
    login = subprocess.Popen(
        [HAPPY, "auth", "login", "--server", server.url],
        env=env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert login.stdout is not None
    link = ""
    for line in login.stdout:  # bounded by the test's timeout
        link = line.strip() if line.startswith("happy://terminal?") else link
        if line.startswith("Waiting for the app"):
            return login, link
    raise AssertionError(f"login ended early: {login.wait()} {login.stderr and login.stderr.read()}")


@pytest.mark.parametrize("v2", [True, False], ids=["v2-dataKey", "v1-legacy"])
def test_login_approved_by_the_app_writes_happys_credentials(
    happy_server: HappyServer, tmp_path: Path, v2: bool
) -> None:
    app = HappyApp(happy_server.url)
    login, link = start_login(tmp_path, happy_server)
    app.approve(link, v2=v2)
    out, err = login.communicate(timeout=30)
    assert login.returncode == 0, err
    variant = "dataKey" if v2 else "legacy"
    said = f"Logged in to {happy_server.url} ({variant} credentials, machine "
    assert out.splitlines()[-1].startswith(said)

    key = tmp_path / "access.key"
    assert key.stat().st_mode & 0o777 == 0o600
    text = key.read_text()
    stored = json.loads(text)
    token = stored["token"]
    if v2:
        assert list(stored) == ["encryption", "token"]
        assert stored["encryption"]["publicKey"] == b64(content_keypair(app.secret).public)
        assert len(stored["encryption"]["machineKey"]) == 44  # base64 of 32 random bytes
    else:
        assert stored == {"secret": b64(app.secret), "token": token}
    assert text == json.dumps(stored, indent=2)  # as JSON.stringify(…, null, 2) writes it
    machine_id = json.loads((tmp_path / "settings.json").read_text())["machineId"]

    status = happy(tmp_path, "auth", "status", "--server", happy_server.url)
    assert status.returncode == 0
    assert status.stdout.splitlines() == [
        f"server: {happy_server.url}",
        f"logged in ({variant} credentials in {key})",
        f"machine id: {machine_id}",
    ]
    # The token is the account's: the server serves it the account's sessions.
    assert httpx.get(f"{happy_server.url}/v1/sessions", headers=HappyApp.auth(token)).status_code == 200
    assert httpx.get(f"{happy_server.url}/v1/sessions", headers=HappyApp.auth("bogus")).status_code == 401

    logout = happy(tmp_path, "auth", "logout")
    assert (logout.returncode, logout.stdout) == (0, f"logged out (removed {key})\n")
    assert not key.exists()
    after = happy(tmp_path, "auth", "status")
    assert after.returncode == 1
    assert "not logged in" in after.stdout


def test_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    done = happy(tmp_path, "auth", "login", "--server", url)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"happy: cannot reach Happy's server at {url} (ConnectError): "
        "check the address (--server, HAPPY_SERVER_URL) and the network"
    ]
    assert not (tmp_path / "access.key").exists()


def test_ctrl_c_while_waiting_cancels_and_saves_nothing(happy_server: HappyServer, tmp_path: Path) -> None:
    login, _ = start_login(tmp_path, happy_server)
    login.send_signal(signal.SIGINT)
    _, err = login.communicate(timeout=30)
    assert login.returncode == 130
    assert err == "happy: login cancelled; nothing was saved\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []
