"""The test playing the Happy app on the server's live socket, where happy-agent cannot: a
user-scoped Socket.IO client of the real server (path `/v1/updates`, as `bridge/link/updates.py`
connects) that learns each new session's key from its `new-session` push (the dataEncryptionKey
unwrapped with the account's content secret key, as the app does), keeps every session's
decrypted `agentState` and metadata from the `update-session` pushes, its presence from the
`activity` ephemerals, and calls a session's RPCs (`rpc-call`, parameters and result sealed).

python-socketio's asyncio client runs on a loop in a thread of its own, so a test driving a TUI
under a PTY keeps draining it while it waits: `call` returns a future, the rest reads snapshots."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import socketio

from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.keys.crypto import content_keypair, unb64, unwrap_data_key

# The app's side is python-socketio, an implementation of Socket.IO independent of the bridge's own.
UPDATES_PATH = "v1/updates"
CONNECT_TIMEOUT = 15.0
RPC_TIMEOUT = 40.0  # seconds: above the server's own 30 s for an answer


class RpcRefused(Exception):
    """The server answered `{ok: false, error}` (no such method, no answer in time)."""


@dataclass
class AppSession:
    """One session as the app holds it: its cipher, and the latest of its versioned values."""

    id: str
    cipher: SessionCipher
    metadata: Any = None
    metadata_version: int = -1
    agent_state: Any = None
    agent_state_version: int = -1
    activity: list[dict[str, Any]] = field(default_factory=list)  # `active`, `thinking`, in order


class AppSocket:
    def __init__(self, url: str, token: str, secret: bytes) -> None:
        self._secret = secret
        self._content_secret = content_keypair(secret).secret
        self._lock = threading.Condition()  # notified on every change it holds
        self._sessions: dict[str, AppSession] = {}
        self.session_events: list[dict[str, Any]] = []  # the server's `session-event` ephemerals
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="app-socket", daemon=True)
        self._thread.start()
        self._client = socketio.AsyncClient(reconnection=False, logger=False)
        self._client.on("update", self._on_update)
        self._client.on("ephemeral", self._on_ephemeral)
        auth = {"token": token, "clientType": "user-scoped"}
        connect = self._client.connect(url, auth=auth, transports=["websocket"], socketio_path=UPDATES_PATH)
        self._submit(connect).result(CONNECT_TIMEOUT)

    def close(self) -> None:
        self._submit(self._client.disconnect()).result(CONNECT_TIMEOUT)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CONNECT_TIMEOUT)
        self._loop.close()

    def __enter__(self) -> AppSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what the app sees --------------------------------------------------------------------

    def session(self, happy_id: str) -> AppSession | None:
        with self._lock:
            return self._sessions.get(happy_id)

    def session_ids(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

    def agent_state(self, happy_id: str) -> dict[str, Any]:
        """The session's latest agentState (empty before it has one)."""
        found = self.session(happy_id)
        return found.agent_state if found is not None and isinstance(found.agent_state, dict) else {}

    def metadata(self, happy_id: str) -> dict[str, Any]:
        found = self.session(happy_id)
        return found.metadata if found is not None and isinstance(found.metadata, dict) else {}

    def activity(self, happy_id: str) -> list[dict[str, Any]]:
        found = self.session(happy_id)
        with self._lock:
            return list(found.activity) if found is not None else []

    def wait(self, check: Callable[[], Any], timeout: float, what: str) -> Any:
        """`check()`'s first truthy answer, tried again on each push; for a test with no PTY to
        drain (one with a TUI waits with `HappyTui.wait`, reading the snapshots above)."""
        with self._lock:
            if answer := self._lock.wait_for(check, timeout):
                return answer
        raise AssertionError(f"not within {timeout} s: {what}")

    # --- what the app does --------------------------------------------------------------------

    def call(self, happy_id: str, name: str, params: Any) -> Future[Any]:
        """Call the session's RPC `name`: a future of its decrypted result (RpcRefused if the
        server refused the call)."""
        found = self.session(happy_id)
        assert found is not None, f"no key for session {happy_id}: its new-session push never came"
        return self._submit(self._call(found, name, params))

    async def _call(self, session: AppSession, name: str, params: Any) -> Any:
        body = {"method": f"{session.id}:{name}", "params": session.cipher.seal(params)}
        answer = await self._client.call("rpc-call", body, timeout=RPC_TIMEOUT)
        if not isinstance(answer, dict) or not answer.get("ok"):
            raise RpcRefused(str(answer))
        return session.cipher.open(answer["result"])

    # --- the socket's traffic (on the loop's thread) ------------------------------------------

    def _submit(self, coroutine: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _on_update(self, data: Any) -> None:
        body = data.get("body") if isinstance(data, dict) else None
        if not isinstance(body, dict):
            return
        if body.get("t") == "new-session":
            self._learn(body)
        elif body.get("t") == "update-session":
            self._updated(body)

    def _learn(self, body: dict[str, Any]) -> None:
        wrapped = body.get("dataEncryptionKey")
        if wrapped is None:
            cipher = SessionCipher("legacy", self._secret)
        else:
            cipher = SessionCipher("dataKey", unwrap_data_key(unb64(wrapped), self._content_secret))
        session = AppSession(str(body["id"]), cipher)
        session.metadata, session.metadata_version = cipher.open(body["metadata"]), body["metadataVersion"]
        if body.get("agentState"):
            session.agent_state = cipher.open(body["agentState"])
            session.agent_state_version = body["agentStateVersion"]
        with self._lock:
            self._sessions.setdefault(session.id, session)
            self._lock.notify_all()

    def _updated(self, body: dict[str, Any]) -> None:
        with self._lock:
            session = self._sessions.get(str(body.get("id")))
            if session is None:
                return
            metadata, state = body.get("metadata"), body.get("agentState")
            if isinstance(metadata, dict) and metadata["version"] > session.metadata_version:
                session.metadata = session.cipher.open(metadata["value"]) if metadata["value"] else None
                session.metadata_version = metadata["version"]
            if isinstance(state, dict) and state["version"] > session.agent_state_version:
                session.agent_state = session.cipher.open(state["value"]) if state["value"] else None
                session.agent_state_version = state["version"]
            self._lock.notify_all()

    def app_state(self, state: str) -> None:
        """Report the app in the foreground (`active`: the server pushes nothing) or not."""
        self._submit(self._client.emit("app-state", {"state": state})).result(CONNECT_TIMEOUT)

    async def _on_ephemeral(self, data: Any) -> None:
        if isinstance(data, dict) and data.get("type") == "session-event":
            with self._lock:
                self.session_events.append(data)
                self._lock.notify_all()
        if not isinstance(data, dict) or data.get("type") != "activity":
            return
        with self._lock:
            session = self._sessions.get(str(data.get("id")))
            if session is not None:
                session.activity.append({"active": data.get("active"), "thinking": data.get("thinking")})
            self._lock.notify_all()
