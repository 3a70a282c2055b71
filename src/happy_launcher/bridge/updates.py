"""Happy's server's live socket for one account (Socket.IO, path `/v1/updates`, user-scoped):
the updates it pushes (new messages from the app), the RPCs the app calls on our sessions, and
what we tell it (agentState, metadata, presence). One Protocol, the real one on python-socketio
and a fake beside it (`bridge/fake_updates.py`), so the bridge's logic is tested in-process.

The real one reconnects by itself (capped backoff); `UpdateHandler.connected` runs after every
(re)connection, because the server forgets a socket's RPC registrations when it drops."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

from happy_launcher.errors import HappyServerError

_log = logging.getLogger(__name__)
UPDATES_PATH = "v1/updates"
CALL_TIMEOUT = 15.0  # seconds for an acknowledged emit (update-state, update-metadata)
RECONNECT_MAX = 30.0  # seconds: the cap of the reconnection backoff


class UpdateHandler(Protocol):
    """What the bridge does with the socket's traffic."""

    async def connected(self) -> None:
        """(Re)connected: register the sessions' RPCs, fetch what was missed meanwhile."""
        ...

    async def update(self, body: dict[str, Any]) -> None:
        """A pushed update's body (`t`: new-message, update-session, …)."""
        ...

    async def rpc(self, method: str, params: str) -> str | None:
        """An RPC the app called on `method` (`<happy session id>:<name>`): its sealed result
        (None for a session unknown here)."""
        ...


class Updates(Protocol):
    async def emit(self, event: str, data: dict[str, Any]) -> None:
        """Send without waiting for an answer (lost if the socket is down: callers re-send state
        on `connected`)."""
        ...

    async def call(self, event: str, data: dict[str, Any]) -> Any:
        """Send and return the server's acknowledgement; HappyServerError if none comes."""
        ...


class SocketUpdates:
    """The real socket (python-socketio on asyncio, websocket transport)."""

    def __init__(self, client: Any, url: str) -> None:
        self._client = client
        self._url = url

    async def emit(self, event: str, data: dict[str, Any]) -> None:
        import socketio

        try:
            await self._client.emit(event, data)
        except socketio.exceptions.SocketIOError:
            _log.debug("%s not sent: the socket to %s is down", event, self._url)

    async def call(self, event: str, data: dict[str, Any]) -> Any:
        import socketio

        try:
            return await self._client.call(event, data, timeout=CALL_TIMEOUT)
        except socketio.exceptions.SocketIOError as exc:
            raise HappyServerError(f"Happy's server at {self._url} did not answer {event} ({exc})") from None


@asynccontextmanager
async def open_updates(url: str, token: str, handler: UpdateHandler) -> AsyncIterator[Updates]:
    """The account's socket to the server at `url`, connected (retrying until it is) for the
    block; `handler` gets its traffic."""
    import socketio

    client = socketio.AsyncClient(
        reconnection=True, reconnection_delay_max=RECONNECT_MAX, handle_sigint=False, logger=False
    )

    async def on_connect() -> None:
        _log.info("connected to %s", url)
        await handler.connected()

    async def on_update(data: Any) -> None:
        body = data.get("body") if isinstance(data, dict) else None
        if isinstance(body, dict):
            await handler.update(body)

    async def on_rpc(data: Any) -> str | None:
        method = data.get("method") if isinstance(data, dict) else None
        params = data.get("params") if isinstance(data, dict) else None
        if not isinstance(method, str) or not isinstance(params, str):
            return None
        return await handler.rpc(method, params)

    client.on("connect", on_connect)
    client.on("update", on_update)
    client.on("rpc-request", on_rpc)
    auth = {"token": token, "clientType": "user-scoped"}
    await client.connect(url, auth=auth, transports=["websocket"], socketio_path=UPDATES_PATH, retry=True)
    try:
        yield SocketUpdates(client, url)
    finally:
        await client.disconnect()
