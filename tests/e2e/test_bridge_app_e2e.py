"""The Happy app drives a TUI session through the real server, where happy-agent cannot: the test
plays the app on the account's live socket (`tests/support/app_socket.py`), reads the session's
decrypted agentState and calls its RPCs; the real Claude runs under happy's PTY against the fake
API, and `happy claude` starts the bridge itself.

- a permission dialog appears in agentState.requests, is approved by the `permission` RPC (the
  tool runs), a second one denied with a reason (the TUI shows it), both in completedRequests;
- `happy-agent send` answered once by a session in inject mode;
- `killSession` ends the run (143, as SIGTERM) and the session (`session-end`: inactive, archived);
- `abort` ends a slow turn cancelled; `switch` to remote and back, the session's mode following."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.store.sessions import SessionStore
from tests.e2e.conftest import Launch, echo
from tests.e2e.test_switch_e2e import SLOW, texts, turn_ends, wait_tui_ready
from tests.support.app_socket import AppSocket
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import FakeAnthropic, Reply, Rule, Script, Text, ToolUse
from tests.support.happy_account import HappyAccount, until
from tests.support.happy_tui import HappyTui, happy_executable

pytestmark = pytest.mark.timeout(240)
BOUND = 60.0  # seconds any wait may take
WRITE = "echo hi > written.txt"
REMOVE = "rm written.txt"
DIALOG = "Do you want to proceed"
REASON = "not on Fridays"


@pytest.fixture
def script() -> Script:
    write = ToolUse("Bash", {"command": WRITE, "description": "Write written.txt"})
    remove = ToolUse("Bash", {"command": REMOVE, "description": "Remove written.txt"})
    rules = [
        Rule(Reply([Text(SLOW, chunk_size=6)], chunk_delay=0.3), prompt="use slow"),
        Rule(Reply([Text("Writing it."), write]), prompt="write it"),
        Rule(Reply([Text("Removing it."), remove]), prompt="remove it"),
        Rule(Reply([Text("Done with the tool.")]), tool_result="Bash"),
    ]
    return Script(rules, fallback=echo)


@pytest.fixture
def claude_options() -> dict[str, Any]:
    return {"permission_mode": "default", "allow": ()}


def start(
    launch: Launch, cenv: ClaudeEnv, env: dict[str, str], app: AppSocket, *args: str
) -> tuple[HappyTui, str]:
    """`happy claude` in the TUI, ready, and its Happy session as the app sees it: its RPCs
    registered and its agentState told (the bridge's watch of it runs)."""
    t = launch(cenv, args, env={**env, "TERM": "xterm"})
    t.wait_ready()
    t.wait(lambda: len(app.session_ids()) == 1, BOUND, "the session's new-session push")
    [happy_id] = app.session_ids()
    t.wait(
        lambda: app.agent_state(happy_id).get("controlledByUser") is True, BOUND, "agentState: the TUI has it"
    )
    return t, happy_id


def answered(t: HappyTui, call: Future[Any], what: str) -> Any:
    """The RPC's result, the PTY drained meanwhile."""
    t.wait(call.done, BOUND, what)
    return call.result()


def pending(t: HappyTui, app: AppSocket, happy_id: str, command: str) -> str:
    """The id of the permission request for `command`, once agentState lists it."""

    def found() -> str | None:
        requests = app.agent_state(happy_id).get("requests", {})
        ids = [
            rid for rid, r in requests.items() if r["tool"] == "Bash" and r["arguments"]["command"] == command
        ]
        return ids[0] if ids else None

    t.wait(lambda: found() is not None, BOUND, f"agentState.requests for {command!r}")
    request_id = found()
    assert request_id is not None
    return request_id


def completed(t: HappyTui, app: AppSocket, happy_id: str, request_id: str) -> dict[str, Any]:
    state: dict[str, Any] = {}

    def settled() -> bool:
        state.update(app.agent_state(happy_id))
        return request_id in state.get("completedRequests", {})

    t.wait(settled, BOUND, f"request {request_id} in completedRequests")
    assert request_id not in state["requests"]
    done: dict[str, Any] = state["completedRequests"][request_id]
    return done


def test_the_app_answers_permissions_and_a_message_then_kills_the_session(
    cenv: ClaudeEnv, launch: Launch, account: HappyAccount, home: Path, fake: FakeAnthropic
) -> None:
    with account.socket() as app:
        t, happy_id = start(launch, cenv, account.env(home), app, "--happy-remote-input", "inject")
        written = cenv.cwd / "written.txt"

        mark = len(t.seen)
        t.submit("write it")
        allowed = pending(t, app, happy_id, WRITE)
        t.expect_screen(DIALOG, since=mark)  # as the user on the phone would see it too
        assert (
            answered(t, app.call(happy_id, "permission", {"id": allowed, "approved": True}), "allowed")
            is None
        )
        t.expect_screen("Done with the tool.", since=mark)
        assert written.is_file()
        assert completed(t, app, happy_id, allowed)["status"] == "approved"
        t.wait_turn_end(1)

        mark = len(t.seen)
        t.submit("remove it")
        denied = pending(t, app, happy_id, REMOVE)
        t.expect_screen(DIALOG, since=mark)
        deny = {"id": denied, "approved": False, "reason": REASON}
        assert answered(t, app.call(happy_id, "permission", deny), "denied") is None
        t.expect_screen(f"Reason: {REASON}", since=mark)
        settled = completed(t, app, happy_id, denied)
        assert (settled["status"], settled.get("reason")) == ("denied", REASON)
        t.wait_turn_end(2)
        assert written.is_file()

        account.agent("send", happy_id, "hello from the phone")  # typed into the TUI (inject)
        t.expect_screen("Echo: hello from the phone")
        t.wait_turn_end(3)

        killed = answered(t, app.call(happy_id, "killSession", {}), "killSession")
        assert killed == {"success": True}
        assert t.wait_exit() == 143  # as SIGTERM ends happy
        app.wait(lambda: app.metadata(happy_id).get("lifecycleState") == "archived", BOUND, "archived")
        app.wait(lambda: {"active": False, "thinking": False} in app.activity(happy_id), BOUND, "session-end")
    listed = until(lambda: json.loads(account.agent("list", "--json")), BOUND, "the session listed")
    assert [(s["id"], s["active"]) for s in listed] == [(happy_id, False)]
    asked = [r.last_user_text for r in fake.requests]
    assert asked.count("hello from the phone") == 1
    with SessionStore.open(home) as store:
        [ours] = store.list_sessions()
        said = [e.ev.text for _, e in store.envelopes(ours.id) if e.ev.t == "text"]
    assert said.count("hello from the phone") == 1 and said.count("Echo: hello from the phone") == 1


def mode(t: HappyTui) -> str:
    """The running session's mode, as `happy sessions` (the control socket's `status`) says it."""
    done = subprocess.run(
        [happy_executable(), "sessions", "--json"], env=t.env, capture_output=True, text=True, timeout=BOUND
    )
    assert done.returncode == 0, done.stderr
    [session] = [s for s in map(json.loads, done.stdout.splitlines()) if s["state"] == "running"]
    return str(session["mode"])


def test_the_app_aborts_a_turn_and_switches_the_session_both_ways(
    cenv: ClaudeEnv, launch: Launch, account: HappyAccount, home: Path
) -> None:
    with account.socket() as app:
        t, happy_id = start(launch, cenv, account.env(home), app)
        t.submit("use slow please")
        t.expect_screen("word2")  # streaming
        t.wait(lambda: {"active": True, "thinking": True} in app.activity(happy_id), BOUND, "thinking")
        assert answered(t, app.call(happy_id, "abort", {"reason": "stop"}), "abort") is None
        t.wait_events(lambda evs: turn_ends(evs) == ["cancelled"], BOUND, "the aborted turn's end")

        assert answered(t, app.call(happy_id, "switch", {"to": "remote"}), "switch to remote") is True
        # Told with the answer (the server pushes the state before it acks it, on the same socket),
        # not at the next keepalive.
        assert app.agent_state(happy_id)["controlledByUser"] is False
        t.expect_screen("remote")
        assert mode(t) == "remote"

        mark = len(t.seen)
        assert answered(t, app.call(happy_id, "switch", {"to": "local"}), "switch to local") is True
        assert app.agent_state(happy_id)["controlledByUser"] is True
        wait_tui_ready(t, mark)
        assert mode(t) == "local"
        t.submit("hello local")
        t.wait_turn_end(2)
        assert t.exit() == 0
    with SessionStore.open(home) as store:
        [ours] = store.list_sessions()
        envelopes = [json.loads(body) for _, body in store.raw_envelopes(ours.id)]
    assert turn_ends(envelopes) == ["cancelled", "completed"]
    assert texts(envelopes, "user") == ["use slow please", "hello local"]
