"""A running session as the app sees it live (bridge/app/watch.py), over the fake controller's real
control socket and the fake account socket: pending requests in agentState and settled ones in
completedRequests, tools allowed for the session answered at once, `thinking` while a turn
runs, and at the end the requests canceled and `session-end` sent."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.bridge.app.session_rpc import SocketControl
from happy_launcher.bridge.app.versioned import Versioned
from happy_launcher.bridge.app.watch import SessionWatch, allows
from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.link.fake_updates import FakeUpdates
from happy_launcher.control.fake import FakeController
from happy_launcher.control.views import SessionView
from happy_launcher.control.wire import Permission
from happy_launcher.protocol import EnvelopeFactory, SequentialIds, TurnEndEv, TurnStartEv
from happy_launcher.session.ports import PermissionRequest
from tests.support.control import facts, running

pytestmark = pytest.mark.anyio
CIPHER = SessionCipher("dataKey", secrets.token_bytes(32))


def state(updates: FakeUpdates, event: str = "update-state") -> dict[str, Any]:
    value = updates.values.get((event, "srv-1"))
    return {} if value is None else dict(CIPHER.open(value))


def describe(running: bool, first_prompt: str | None) -> dict[str, Any]:
    return {"name": first_prompt, "lifecycleState": "running" if running else "archived"}


def bash(request_id: str, command: str) -> PermissionRequest:
    return PermissionRequest(request_id, "Bash", {"command": command}, command, origin="local")


async def test_the_app_sees_requests_turns_and_the_end(tmp_path: Path) -> None:
    controller = FakeController(facts(mode="local"))
    controller.request_permission(bash("r0", "make"))  # pending before the bridge came
    updates = FakeUpdates()
    make = EnvelopeFactory(SequentialIds("e"))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg, running(controller, tmp_path) as socket:
            watch = watching(tmp_path, socket, updates)
            tg.start_soon(watch.run)
            await updates.until(lambda: "r0" in state(updates).get("requests", {}))
            assert state(updates)["controlledByUser"] is True
            assert state(updates)["requests"]["r0"] == {
                "tool": "Bash",
                "arguments": {"command": "make"},
                "createdAt": 1000,
            }
            controller.request_permission(bash("r1", "npm test"))  # allowed for the session
            controller.request_permission(bash("r2", "rm -rf build"))
            await updates.until(lambda: "r2" in state(updates).get("requests", {}))
            assert controller.answers == [("r1", True, None)]
            controller.answer("r0", False, "no")
            await updates.until(lambda: "r0" in state(updates).get("completedRequests", {}))
            assert state(updates)["completedRequests"]["r0"]["status"] == "denied"
            controller.commit([make.user_text("fix the build", 1)])
            await updates.until(lambda: state(updates, "update-metadata").get("name") == "fix the build")
            controller.commit([make.agent(TurnStartEv(), turn="t1", time=1)])
            await updates.until(lambda: any(a["thinking"] for a in updates.events("session-alive")))
            controller.commit([make.agent(TurnEndEv(status="completed"), turn="t1", time=2)])
            await updates.until(lambda: not updates.events("session-alive")[-1]["thinking"])
            # the session ends (its socket goes away): the watch tells it, once
    final = state(updates)
    assert final["requests"] == {} and final["completedRequests"]["r2"]["status"] == "canceled"
    assert updates.events("session-end") == [{"sid": "srv-1", "time": 1000}]
    assert state(updates, "update-metadata") == {"name": "fix the build", "lifecycleState": "archived"}


def watching(home: Path, socket: Path, updates: FakeUpdates) -> SessionWatch:
    view = SessionView("hs-alpha", None, "running", "local", "/w", None, 0, None, socket)
    return SessionWatch(
        home,
        view,
        "srv-1",
        updates,
        SocketControl(),
        lambda: 1000,
        state=Versioned(updates, "agentState", "srv-1", CIPHER),
        metadata=Versioned(updates, "metadata", "srv-1", CIPHER),
        describe=describe,
        allowed=lambda: ["Bash(git status)", "Bash(npm:*)"],
    )


async def test_a_watch_stopped_by_the_bridge_tells_no_end(tmp_path: Path) -> None:
    updates = FakeUpdates()
    with anyio.fail_after(10):
        async with running(FakeController(facts()), tmp_path) as socket, anyio.create_task_group() as tg:
            tg.start_soon(watching(tmp_path, socket, updates).run)
            await updates.until(lambda: bool(updates.events("session-alive")))
            tg.cancel_scope.cancel()  # the bridge stops: the session runs on
    assert updates.events("session-end") == []
    assert state(updates, "update-metadata")["lifecycleState"] == "running"


def test_tools_allowed_for_the_session_are_happys_rules() -> None:
    def request(tool: str, **args: Any) -> Permission:
        return Permission(id="r", tool=tool, input=args, title=tool)

    rules = ["Read", "Bash(git status)", "Bash(npm:*)", "Bash"]
    assert allows(rules, request("Read", file_path="/x"))
    assert allows(rules, request("Bash", command="git status"))
    assert allows(rules, request("Bash", command="npm run build"))
    assert not allows(rules, request("Bash", command="git push"))  # plain "Bash" allows nothing
    assert not allows(rules, request("Edit", file_path="/x"))


async def test_a_value_is_sent_by_compare_and_set_and_catches_up_a_version() -> None:
    updates = FakeUpdates()
    updates.versions[("update-state", "srv-1")] = 7  # written before (another run of the bridge)
    publisher = Versioned(updates, "agentState", "srv-1", CIPHER)
    assert await publisher.publish({"controlledByUser": True})
    assert publisher.version == 8 and state(updates)["controlledByUser"] is True
    updates.down = True
    assert not await publisher.publish({})  # said, not raised: sent again on reconnect


async def test_who_has_the_session_follows_a_switch(tmp_path: Path) -> None:
    """The app's switch is told at once; a switch from elsewhere (the control socket tells none)
    at the next keepalive, which asks the session, but not within a keepalive of the app's own
    switch, while the session may still say its old mode."""
    controller = FakeController(facts(mode="local"))
    updates = FakeUpdates()
    now = [1000]

    def watching(socket: Path, keepalive: float) -> SessionWatch:
        view = SessionView("hs-alpha", None, "running", "local", "/w", None, 0, None, socket)
        version = updates.versions.get(("update-state", "srv-1"), 0)
        return SessionWatch(
            tmp_path, view, "srv-1", updates, SocketControl(), lambda: now[0],
            state=Versioned(updates, "agentState", "srv-1", CIPHER, version),
            metadata=Versioned(updates, "metadata", "srv-1", CIPHER),
            describe=describe, allowed=list, keepalive=keepalive,
        )  # fmt: skip

    def sent() -> int:
        return len([event for event, _ in updates.calls if event == "update-state"])

    def controlled() -> bool:
        return bool(state(updates)["controlledByUser"])

    with anyio.fail_after(10):
        async with running(controller, tmp_path) as socket, anyio.create_task_group() as tg:
            watch = watching(socket, keepalive=60)
            tg.start_soon(watch.run)
            await updates.until(lambda: state(updates).get("controlledByUser") is True)
            await watch.switched("remote")
            assert not controlled()  # at once, though the session still says local
            await watch.refresh()
            assert not controlled()  # not asked: the hand-over may still be under way
            now[0] += 60_000
            await watch.refresh()
            assert controlled()  # a keepalive later, the session's word (it never went)
            await SocketControl().switch(socket, "remote")
            await watch.refresh()
            assert not controlled()
            before = sent()
            await watch.refresh()  # no change: nothing sent
            assert sent() == before
            tg.cancel_scope.cancel()
        async with running(controller, tmp_path) as socket, anyio.create_task_group() as tg:
            tg.start_soon(watching(socket, keepalive=0.01).run)
            await updates.until(lambda: sent() > before)  # told at its start, still remote
            await SocketControl().switch(socket, "local")
            await updates.until(controlled)  # by a keepalive
            tg.cancel_scope.cancel()


def test_a_denials_reason_given_before_it_settles_is_kept_only_if_it_was_denied() -> None:
    from happy_launcher.bridge.app.agent_state import AgentState

    state = AgentState()
    for request_id in ("r1", "r2"):
        state.request(Permission(id=request_id, tool="Bash", input={}, title="x"), 1)
        state.reasons[request_id] = "not on Fridays"  # the app's `permission` RPC, as it answers
    state.settle("r1", "denied", 2)
    state.settle("r2", "allowed", 2)  # the terminal allowed it first: no reason
    assert state.completed["r1"]["reason"] == "not on Fridays" and "reason" not in state.completed["r2"]
    assert state.reasons == {}


async def test_what_asks_for_the_user_is_told_with_whether_they_are_at_the_terminal(tmp_path: Path) -> None:
    told: list[tuple[str, str, bool]] = []
    updates = FakeUpdates()
    make = EnvelopeFactory(SequentialIds("e"))
    view = SessionView("hs-alpha", None, "running", "remote", "/w/proj", None, 0, None, None)
    controller = FakeController(facts(mode="remote"))
    with anyio.fail_after(10):
        async with running(controller, tmp_path) as socket, anyio.create_task_group() as tg:
            watch = SessionWatch(
                tmp_path,
                view._replace(socket=socket),
                "srv-1",
                updates,
                SocketControl(),
                lambda: 1000,
                state=Versioned(updates, "agentState", "srv-1", CIPHER),
                metadata=Versioned(updates, "metadata", "srv-1", CIPHER),
                describe=lambda running, first: {"path": "/w/proj"},
                allowed=lambda: ["Bash(npm:*)"],
                notify=lambda a, local: told.append((a.kind, a.key, local)),
                long_turn=0.0,
            )
            tg.start_soon(watch.run)
            await updates.until(lambda: bool(updates.events("session-alive")))
            controller.request_permission(bash("r1", "npm test"))  # allowed for the session: not told
            controller.request_permission(PermissionRequest("r2", "Bash", {"command": "ls"}, "ls"))
            controller.request_permission(PermissionRequest("r3", "AskUserQuestion", {}, "?"))
            await updates.until(lambda: "r3" in state(updates).get("requests", {}))
            controller.commit([make.agent(TurnStartEv(), turn="t1", time=1)])
            controller.commit([make.agent(TurnEndEv(status="failed"), turn="t1", time=2)])
            await updates.until(lambda: len(told) == 3)
            await watch.switched("local")
            controller.commit([make.agent(TurnStartEv(), turn="t2", time=3)])
            controller.commit([make.agent(TurnEndEv(status="completed"), turn="t2", time=4)])
            await updates.until(lambda: len(told) == 4)
            tg.cancel_scope.cancel()
    assert told == [
        ("permission", "r2", False),
        ("question", "r3", False),
        ("failed", "t1", False),
        ("done", "t2", True),
    ]
