"""The machine's RPCs in Happy's terms over a fake spawner: the app's params become a request,
the answer is Happy's id once the new run is linked; resume and stop find our session by Happy's
id (linked now, or in the store); a start asks sessions out to look at once; the RPCs seal with
the machine's cipher; the machine's metadata says what happy-agent checks and is published again
when the allowed directories change."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.bridge.app.machine import MachineMetadata, MachineRpc
from happy_launcher.bridge.app.spawning import MachineSessions, spawn_request
from happy_launcher.bridge.app.versioned import Versioned
from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.link.fake_updates import FakeUpdates
from happy_launcher.bridge.out.links import Links
from happy_launcher.bridge.out.metadata import MachineFacts
from happy_launcher.spawn.dirs import SpawnRefused, SpawnSettings, write_settings
from happy_launcher.spawn.spawner import NeedsCreation, SpawnRequest, Started

pytestmark = pytest.mark.anyio
BOUND = 5.0


@dataclass
class FakeSpawner:
    requests: list[SpawnRequest] = field(default_factory=list)
    resumed: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    refuse: Exception | None = None
    pid: int = 100

    async def start(self, request: SpawnRequest) -> Started:
        if self.refuse is not None:
            raise self.refuse
        self.requests.append(request)
        return Started("s1", self.pid, Path("/log"))

    async def resume(
        self, session_id: str, *, model: str | None = None, permission_mode: str | None = None
    ) -> Started:
        self.resumed.append((session_id, model, permission_mode))
        return Started(session_id, self.pid, Path("/log"))

    async def stop(self, session_id: str) -> bool:
        self.stopped.append(session_id)
        return True


def test_the_apps_params_become_a_request() -> None:
    params = {
        "directory": "/w",
        "approvedNewDirectoryCreation": True,
        "permissionMode": "plan",
        "modelMode": "default",
        "resumeClaudeSessionId": "c-1",
        "prompt": "hi",
        "agent": "claude",
    }
    assert spawn_request(params) == SpawnRequest("/w", True, "hi", None, "plan", "c-1")
    assert spawn_request({"directory": "/w", "modelMode": "opus"}).model == "opus"
    with pytest.raises(SpawnRefused, match=r"^this machine starts Claude sessions only, not codex$"):
        spawn_request({"directory": "/w", "agent": "codex"})
    with pytest.raises(SpawnRefused, match=r"^no directory given$"):
        spawn_request({})


async def test_spawn_answers_happys_id_once_the_run_is_linked() -> None:
    spawner = FakeSpawner()
    sessions = MachineSessions(spawner, lambda happy_id: None, lambda: None)
    answer: list[dict[str, Any]] = []
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                answer.append(await sessions.spawn({"directory": "/w"}))

            tg.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            sessions.linked("other", 100, "h0")
            sessions.linked("s1", None, "h1")  # its stored envelopes: not the run just started
            await anyio.wait_all_tasks_blocked()
            assert answer == []
            sessions.linked("s1", 100, "h1")
    assert answer == [{"type": "success", "sessionId": "h1"}]
    spawner.refuse = NeedsCreation("/w/new")
    ask_first = await sessions.spawn({"directory": "/w/new"})
    assert ask_first == {"type": "requestToApproveDirectoryCreation", "directory": "/w/new"}
    spawner.refuse = SpawnRefused("limit reached: …")
    assert await sessions.spawn({"directory": "/w"}) == {"type": "error", "errorMessage": "limit reached: …"}


async def test_a_run_never_linked_is_an_error_in_words() -> None:
    sessions = MachineSessions(FakeSpawner(), lambda happy_id: None, lambda: None, link_bound=0.01)
    answer = await sessions.spawn({"directory": "/w"})
    assert answer["errorMessage"] == "session s1 started but did not reach the server within 0 s (log: /log)"


async def test_resume_and_stop_find_our_session_by_happys_id() -> None:
    spawner = FakeSpawner(pid=200)
    sessions = MachineSessions(spawner, {"h-old": "s-old"}.get, lambda: None)
    sessions.linked("s1", 100, "h1")
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            answer: list[dict[str, Any]] = []

            async def ask() -> None:
                answer.append(await sessions.resume({"sessionId": "h-old", "model": "opus"}))

            tg.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            sessions.linked("s-old", 200, "h-old")  # the same Happy session, linked again
    assert answer == [{"type": "success", "sessionId": "h-old"}]
    assert spawner.resumed == [("s-old", "opus", None)]
    unknown = await sessions.resume({"sessionId": "nope"})
    assert unknown == {"type": "error", "errorMessage": "nope is not a session of this machine"}
    assert await sessions.stop("h1") and not await sessions.stop("nope")
    assert spawner.stopped == ["s1"]


async def test_machine_rpcs_open_and_seal_with_the_machine_cipher() -> None:
    cipher = SessionCipher("dataKey", secrets.token_bytes(32))
    spawner = FakeSpawner()
    sessions = MachineSessions(spawner, lambda happy_id: None, lambda: None)
    sessions.linked("s1", 100, "h1")
    rpc = MachineRpc("m1", cipher, sessions)
    assert rpc.methods() == ["m1:spawn-happy-session", "m1:resume-happy-session", "m1:stop-session"]
    assert rpc.serves("m1:stop-session") and not rpc.serves("s1:abort")
    with anyio.fail_after(BOUND):
        spawned = cipher.open(await rpc.call("m1:spawn-happy-session", cipher.seal({"directory": "/w"})))
        assert spawned == {"type": "success", "sessionId": "h1"}
        resumed = cipher.open(await rpc.call("m1:resume-happy-session", cipher.seal({"sessionId": "x"})))
        assert resumed == {"type": "error", "errorMessage": "x is not a session of this machine"}
        stopped = await rpc.call("m1:stop-session", cipher.seal({"sessionId": "h1"}))
        assert cipher.open(stopped) == {"message": "Session stopped"}
        garbled = cipher.open(await rpc.call("m1:spawn-happy-session", "not sealed"))
        assert garbled == {"error": "the request is not one this machine understands"}


async def test_the_metadata_says_resume_and_is_published_again_when_the_directories_change(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write_settings(tmp_path, SpawnSettings((tmp_path / "a",)))
    facts = MachineFacts("m1", "host", "linux", str(tmp_path), str(tmp_path))
    metadata = MachineMetadata(facts, lambda: True, lambda: 7, every=0.01)
    now = metadata.current()
    assert now["allowedDirectories"] == [str(tmp_path / "a")]
    assert now["cliAvailability"] == {"claude": True, "codex": False, "gemini": False, "detectedAt": 7}
    assert now["resumeSupport"] == {
        "rpcAvailable": True,
        "requiresSameMachine": True,
        "requiresHappyAgentAuth": False,
        "happyAgentAuthenticated": True,
        "detectedAt": 7,
    }
    cipher = SessionCipher("dataKey", secrets.token_bytes(32))
    updates = FakeUpdates()
    updates.versions[("machine-update-metadata", "m1")] = 1  # as registering left it

    def published() -> list[Any]:  # what the server took, in order
        return [
            cipher.open(d["metadata"])["allowedDirectories"]
            for e, d in updates.calls
            if e == "machine-update-metadata" and d["expectedVersion"] == updates.versions[(e, "m1")] - 1
        ]

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(metadata.keep, Versioned(updates, "machine", "m1", cipher))
            await updates.until(lambda: published() == [[str(tmp_path / "a")]])
            write_settings(tmp_path, SpawnSettings((tmp_path / "b",)))
            await updates.until(lambda: published()[-1:] == [[str(tmp_path / "b")]])
            tg.cancel_scope.cancel()


async def test_a_look_asked_for_cuts_sessions_outs_pause_short() -> None:
    links = Links()
    with anyio.fail_after(BOUND):
        links.look_now()  # asked before the pause: none
        await links.pause(anyio.sleep_forever)
        async with anyio.create_task_group() as tg:
            tg.start_soon(links.pause, anyio.sleep_forever)
            await anyio.wait_all_tasks_blocked()
            links.look_now()
