"""The whole bridge, as a Happy user meets it: `happy claude` (remote mode, the real Claude against
the fake API) with credentials starts the bridge itself; Happy's own client, `happy-agent`, as
the same account, lists the session, reads its history decrypted, and sends it a message, which
the session answers once; the server's disk holds none of it in plaintext."""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.bridge.credentials import Credentials, write_credentials
from happy_launcher.bridge.crypto import b64, content_keypair
from happy_launcher.store.sessions import SessionStore
from tests.support import happy_server as peer
from tests.support.claude_env import ClaudeEnv
from tests.support.happy_app import HappyApp
from tests.support.happy_tui import happy_executable

pytestmark = pytest.mark.timeout(180)
HAPPY = happy_executable()
BOUND = 60.0  # seconds any wait may take


def until(check: Callable[[], Any], what: str) -> Any:
    """`check()`'s first truthy answer; each try is a real call (happy-agent, the store)."""
    import time

    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        if answer := check():
            return answer
    raise AssertionError(f"not within {BOUND} s: {what}")


def test_the_app_reads_and_drives_a_session(
    happy_peer: Path, happy_server: peer.HappyServer, cenv: ClaudeEnv, home: Path, tmp_path: Path
) -> None:
    app = HappyApp(happy_server.url)
    content = content_keypair(app.secret).public
    write_credentials(
        home, Credentials(app.token, "dataKey", content_public=content, machine_key=secrets.token_bytes(32))
    )
    agent_home = tmp_path / "agent"
    agent_home.mkdir()
    (agent_home / "agent.key").write_text(json.dumps({"token": app.token, "secret": b64(app.secret)}))

    def agent(*args: str) -> str:
        return peer.agent(happy_peer, happy_server, agent_home, *args)

    def history_with(happy_id: str, text: str) -> str:
        history = agent("history", happy_id, "--json")
        return history if text in history else ""

    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    env["HAPPY_SERVER_URL"] = happy_server.url
    run = subprocess.Popen(
        [HAPPY, "claude", "--happy-remote"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cenv.cwd,
    )
    assert run.stdin is not None and run.stdout is not None
    try:
        run.stdin.write(b"hello from the terminal\n")
        run.stdin.flush()
        assert run.stdout.readline() == b"Echo: hello from the terminal\n"
        listed = until(lambda: json.loads(agent("list", "--json")), "the session listed by happy-agent")
        [session] = listed
        happy_id = session["id"]
        until(lambda: history_with(happy_id, "Echo: hello from the terminal"), "its history")
        agent("send", happy_id, "hello from the phone")
        history = until(lambda: history_with(happy_id, "Echo: hello from the phone"), "the answer")
    finally:
        run.stdin.close()
        assert run.wait(timeout=BOUND) == 0, run.stderr.read() if run.stderr else ""
    with SessionStore.open(home) as store:
        [ours] = store.list_sessions()
        texts = [e.ev.text for _, e in store.envelopes(ours.id) if e.ev.t == "text"]
    assert texts.count("hello from the phone") == 1 and texts.count("Echo: hello from the phone") == 1
    assert history.count("Echo: hello from the phone") == 1
    on_disk = b"".join(p.read_bytes() for p in happy_server.data.rglob("*") if p.is_file())
    for plain in (b"hello from the terminal", b"hello from the phone", b"Echo: hello"):
        assert plain not in on_disk  # the server holds ciphertext only
