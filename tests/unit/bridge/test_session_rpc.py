"""The app's RPCs on a session (bridge/app/session_rpc.py), sealed as the app seals them, answered
through the fake controller's real control socket."""

from __future__ import annotations

import secrets
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.bridge.app.session_rpc import SessionRpc, SocketControl, Target, rpc_methods
from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.control.fake import FakeController
from happy_launcher.session.ports import PermissionRequest
from tests.support.control import facts, running

pytestmark = pytest.mark.anyio
CIPHER = SessionCipher("legacy", secrets.token_bytes(32))


class Harness:
    def __init__(self, socket: Path | None, pid: int | None = 4242) -> None:
        self.target = Target("hs-alpha", CIPHER, socket, pid)
        self.allowed: list[tuple[str, list[str]]] = []
        self.killed: list[tuple[int, int]] = []
        self.denied: list[tuple[str, str, str]] = []
        self.switched: list[tuple[str, str]] = []

        async def switched(session: str, to: str) -> None:
            self.switched.append((session, to))

        self.rpc = SessionRpc(
            lambda happy_id: self.target if happy_id == "srv-1" else None,
            SocketControl(),
            lambda session, tools: self.allowed.append((session, list(tools))),
            kill=lambda pid, sig: self.killed.append((pid, sig)),
            denied=lambda *said: self.denied.append(said),
            switched=switched,
        )

    async def call(self, name: str, params: Any) -> Any:
        with anyio.fail_after(10):
            sealed = await self.rpc.call(f"srv-1:{name}", CIPHER.seal(params))
        assert sealed is not None
        return CIPHER.open(sealed)


def pending(controller: FakeController, *ids: str) -> None:
    for request_id in ids:
        controller.request_permission(PermissionRequest(request_id, "Bash", {"command": "ls"}, "ls"))


async def test_the_apps_answers_settle_the_sessions_requests(tmp_path: Path) -> None:
    controller = FakeController(facts(busy=True))
    pending(controller, "r1", "r2", "r3", "r4")
    async with running(controller, tmp_path) as socket:
        h = Harness(socket)
        await h.call("permission", {"id": "r1", "approved": True})
        await h.call("permission", {"id": "r2", "approved": False, "reason": "not that"})
        await h.call("permission", {"id": "r3", "approved": False})
        allow = {"id": "r4", "approved": True, "decision": "approved_for_session", "allowTools": ["Bash(ls)"]}
        await h.call("permission", allow)
        assert controller.aborts == 0
        pending(controller, "r5")
        await h.call("permission", {"id": "r5", "approved": False, "decision": "abort"})
    assert controller.answers == [
        ("r1", True, None),
        ("r2", False, "not that"),
        ("r3", False, "denied from the Happy app"),
        ("r4", True, None),
        ("r5", False, "denied from the Happy app"),
    ]
    assert controller.aborts == 1 and h.allowed == [("hs-alpha", ["Bash(ls)"])]
    assert [(request, reason) for _, request, reason in h.denied] == [
        ("r2", "not that"),
        ("r3", "denied from the Happy app"),
        ("r5", "denied from the Happy app"),
    ]


async def test_abort_switch_and_kill(tmp_path: Path) -> None:
    controller = FakeController(facts(busy=True, mode="local"))
    async with running(controller, tmp_path) as socket:
        h = Harness(socket)
        assert await h.call("abort", {"reason": "stop"}) is None
        assert await h.call("switch", {"to": "remote"}) is True
        assert await h.call("killSession", {}) == {"success": True}
    assert controller.aborts == 1 and controller.facts().mode == "remote"
    assert h.switched == [("hs-alpha", "remote")]  # the watch hears it before the app's answer
    assert h.killed == [(4242, signal.SIGTERM)]


async def test_what_cannot_be_done_is_an_error_result_never_a_crash(tmp_path: Path) -> None:
    controller = FakeController(facts())
    async with running(controller, tmp_path) as socket:
        h = Harness(socket)
        answered = await h.call("permission", {"id": "gone", "approved": True})
        assert "no pending permission request gone" in answered["error"]
        assert "error" in await h.call("switch", {"to": "sideways"})
        assert h.switched == []
        assert await h.call("nonsense", {}) == {"error": "Method not found"}
        assert "error" in CIPHER.open(await h.rpc.call("srv-1:abort", "not sealed") or "")
    stopped = Harness(None, pid=None)
    assert await stopped.call("abort", {}) == {"error": "the session is not running"}
    assert await stopped.call("killSession", {}) == {
        "success": False,
        "message": "the session is not running",
    }
    assert await stopped.rpc.call("unknown:abort", "x") is None
    assert rpc_methods("srv-1") == ["srv-1:permission", "srv-1:abort", "srv-1:switch", "srv-1:killSession"]
