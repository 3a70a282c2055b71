"""Notifications from the bridge (issue 19), with the real server and one real session (`happy
claude --happy-remote` under a PTY, the real Claude against the fake API), the test playing the
app (`tests/support/app_socket.py`: its push token registered, its foreground reported).

With `--push-url` (the bridge pushes itself, to `tests/support/fake_push.py`, standing in for
Expo): a permission request, a long turn's end (the threshold at 0 s) and a failed turn are
pushed once each; none while the session's user is at the terminal (local mode). Then the bridge
restarted without it (Happy's server pushes): with the app in the foreground the server's answer
is `suppressed`; without, the app hears one `session-event` per event."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.bridge.process.daemon import LOG_FILE
from tests.e2e.conftest import Launch, echo
from tests.e2e.test_bridge_app_e2e import answered, pending
from tests.e2e.test_switch_e2e import wait_tui_ready
from tests.support.app_socket import AppSocket
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import ErrorReply, Reply, Rule, Script, Text, ToolUse
from tests.support.fake_push import FakePushService
from tests.support.happy_account import HappyAccount
from tests.support.happy_app import HappyApp
from tests.support.happy_tui import HappyTui, happy_executable

pytestmark = pytest.mark.timeout(300)
HAPPY = happy_executable()
BOUND = 60.0
WRITE = "echo hi > written.txt"
TOKEN = "ExponentPushToken[phone-of-the-test]"


@pytest.fixture
def script() -> Script:
    write = ToolUse("Bash", {"command": WRITE, "description": "Write written.txt"})
    rules = [
        Rule(Reply([Text("Writing it."), write]), prompt="write it"),
        Rule(Reply([Text("Done with the tool.")]), tool_result="Bash"),
        Rule(ErrorReply(400, "no such model"), prompt="fail now"),
    ]
    return Script(rules, fallback=echo)


@pytest.fixture
def claude_options() -> dict[str, Any]:
    return {"permission_mode": "default", "allow": ()}


def daemon(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [HAPPY, "daemon", *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=BOUND
    )
    assert done.returncode == 0, done.stderr


def allow(t: HappyTui, app: AppSocket, happy_id: str) -> str:
    """The pending request for WRITE, allowed from the app; its id."""
    request_id = pending(t, app, happy_id, WRITE)
    assert (
        answered(t, app.call(happy_id, "permission", {"id": request_id, "approved": True}), "allow") is None
    )
    return request_id


def pushed(t: HappyTui, push: FakePushService, count: int) -> list[dict[str, Any]]:
    t.wait(lambda: len(push.messages) >= count, BOUND, f"{count} push message(s)")
    return push.messages[:count]


def test_the_phone_is_told_once_per_event_and_never_while_the_user_is_at_the_terminal(
    cenv: ClaudeEnv, launch: Launch, account: HappyAccount, home: Path
) -> None:
    env = {**account.env(home), "TERM": "xterm"}
    registered = account.app.http.post(
        "/v1/push-tokens", json={"token": TOKEN}, headers=HappyApp.auth(account.app.token)
    )
    assert registered.status_code == 200
    with FakePushService() as push, account.socket() as app:
        daemon(env, "start", "--push-url", push.url, "--long-turn", "0")
        t = launch(cenv, ("--happy-remote",), env=env)
        t.wait(lambda: len(app.session_ids()) == 1, BOUND, "the session's new-session push")
        [happy_id] = app.session_ids()

        account.agent("send", happy_id, "write it")
        request_id = allow(t, app, happy_id)
        asked, done = pushed(t, push, 2)
        assert asked["to"] == TOKEN and (asked["title"], asked["sound"], asked["priority"]) == (
            "Permission request",
            "default",
            "high",
        )
        assert asked["data"] == {
            "sessionId": happy_id,
            "kind": "permission",
            "sessionTitle": asked["body"],
            "url": f"/session/{happy_id}",
            "requestId": request_id,
            "tool": "Bash",
        }
        assert (done["title"], done["data"]["kind"]) == ("It's ready!", "done")
        assert all("authorization" not in {k.lower() for k in h} for h in push.headers)

        account.agent("send", happy_id, "fail now")
        [failed] = pushed(t, push, 3)[2:]
        assert (failed["title"], failed["data"]["kind"]) == ("It failed", "failed")

        # At the terminal: its request and its turn's end are not pushed.
        mark = len(t.seen)
        assert answered(t, app.call(happy_id, "switch", {"to": "local"}), "switch to local") is True
        wait_tui_ready(t, mark)
        t.submit("write it")
        allow(t, app, happy_id)
        t.wait_turn_end(3)
        assert answered(t, app.call(happy_id, "switch", {"to": "remote"}), "switch to remote") is True
        account.agent("send", happy_id, "fail now")
        t.wait(lambda: len(push.messages) >= 4, BOUND, "the next push")
        assert [m["data"]["kind"] for m in push.messages] == ["permission", "done", "failed", "failed"]

        # Happy's server pushes: it suppresses what the app in the foreground shows anyway.
        daemon(env, "stop")
        daemon(env, "start", "--push-url", "")
        app.app_state("active")
        account.agent("send", happy_id, "write it")
        allow(t, app, happy_id)
        log = home / LOG_FILE
        t.wait(lambda: log.read_text().count(": suppressed") == 2, BOUND, "the server's answers: suppressed")
        # The server shows each push-event to the app before it answers, but the app hears it on
        # its own socket, in its own time: both of this turn's, before it is counted from.
        t.wait(lambda: len(app.session_events) == 2, BOUND, "the app's session-events of that turn")
        assert "push permission" in log.read_text()
        app.app_state("background")
        heard = len(app.session_events)
        account.agent("send", happy_id, "write it")
        allow(t, app, happy_id)
        t.wait(lambda: len(app.session_events) >= heard + 2, BOUND, "the app's session-events")
        t.wait_turn_end(6)
        events = app.session_events[heard:]
        assert [(e["kind"], e["sessionId"]) for e in events] == [("permission", happy_id), ("done", happy_id)]
        assert len(push.messages) == 4  # the push service is no longer used
