"""Happy's server's live socket for one account (Socket.IO, path `/v1/updates`, user-scoped):
the updates it pushes (new messages from the app), the RPCs the app calls on our sessions, and
what we tell it (agentState, metadata, presence). One Protocol, the real one (Socket.IO over a
websocket: `bridge/link/engineio.py`, `bridge/link/websocket.py`) and a fake beside it
(`bridge/link/fake_updates.py`), so the bridge's logic is tested in-process.

The real one reconnects by itself (capped backoff); `UpdateHandler.connected` runs after every
(re)connection, because the server forgets a socket's RPC registrations when it drops."""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import anyio.abc

from happy_launcher.bridge.link import engineio
from happy_launcher.bridge.link.websocket import WebSocket, open_websocket
from happy_launcher.errors import HappyServerError

_log = logging.getLogger(__name__)
UPDATES_TARGET = "/v1/updates/?EIO=4&transport=websocket"
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

    async def ephemeral(self, body: dict[str, Any]) -> None:
        """A pushed ephemeral (`type`: activity, usage, machine-activity): not stored by the server."""
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
    """The real socket: Socket.IO over one websocket at a time (`bridge/link/engineio.py`,
    `bridge/link/websocket.py`), connected again after any drop, with a capped, doubling delay."""

    def __init__(self, url: str, token: str, handler: UpdateHandler) -> None:
        self._url = url
        self._token = token
        self._handler = handler
        self._socket: WebSocket | None = None
        self._acks: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self._ids = itertools.count(1)

    async def emit(self, event: str, data: dict[str, Any]) -> None:
        socket = self._socket
        if socket is None:
            _log.debug("%s not sent: the socket to %s is down", event, self._url)
            return
        try:
            await socket.send(engineio.event(event, data))
        except HappyServerError:
            _log.debug("%s not sent: the socket to %s broke", event, self._url)

    async def call(self, event: str, data: dict[str, Any]) -> Any:
        socket = self._socket
        if socket is None:
            raise HappyServerError(f"Happy's server at {self._url} is not connected: {event} not sent")
        ack_id = next(self._ids)
        done, answer = self._acks[ack_id] = (anyio.Event(), [])
        try:
            await socket.send(engineio.event(event, data, ack_id))
            with anyio.move_on_after(CALL_TIMEOUT):
                await done.wait()
        finally:
            del self._acks[ack_id]
        if not answer:
            raise HappyServerError(f"Happy's server at {self._url} did not answer {event}")
        return answer[0]

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connected, or connecting again, until cancelled; started once first connected."""
        failures, started = 0, False
        while True:
            try:
                async with open_websocket(self._url, UPDATES_TARGET) as socket:
                    async for _ in self._session(socket):
                        failures = 0
                        if not started:
                            task_status.started()
                            started = True
            except HappyServerError as exc:
                _log.info("the socket to %s: %s", self._url, exc)
            failures += 1
            await anyio.sleep(min(RECONNECT_MAX, 0.5 * 2 ** min(failures, 10)))

    async def _session(self, socket: WebSocket) -> AsyncIterator[None]:
        """One connection's life; yields once connected. Ends when the connection does."""
        timeout = 60.0
        async with anyio.create_task_group() as tg:
            frames = socket.frames()
            try:
                while True:
                    with anyio.move_on_after(timeout) as waited:
                        frame = await anext(frames, None)
                    if waited.cancelled_caught or frame is None:
                        return  # silent past the server's ping timeout, or closed: connect again
                    packet = engineio.parse(frame)
                    if isinstance(packet, engineio.Open):
                        timeout = packet.ping_interval + packet.ping_timeout
                        await socket.send(
                            engineio.connect({"token": self._token, "clientType": "user-scoped"})
                        )
                    elif isinstance(packet, engineio.Connected):
                        self._socket = socket
                        _log.info("connected to %s", self._url)
                        tg.start_soon(self._handler.connected)
                        yield
                    elif isinstance(packet, engineio.ConnectRefused):
                        raise HappyServerError(
                            f"Happy's server at {self._url} refused the socket: {packet.message}"
                        )
                    else:
                        await self._dispatch(packet, socket, tg)
            finally:
                self._socket = None
                tg.cancel_scope.cancel()

    async def _dispatch(self, packet: engineio.Packet, socket: WebSocket, tg: anyio.abc.TaskGroup) -> None:
        if isinstance(packet, engineio.Ping):
            await socket.send(engineio.PONG)
        elif isinstance(packet, engineio.AckIn) and packet.ack_id in self._acks:
            done, answer = self._acks[packet.ack_id]
            answer.append(packet.data)
            done.set()
        elif isinstance(packet, engineio.EventIn) and packet.name == "update":
            body = packet.data.get("body") if isinstance(packet.data, dict) else None
            if isinstance(body, dict):
                tg.start_soon(self._handler.update, body)
        elif isinstance(packet, engineio.EventIn) and packet.name == "ephemeral":
            if isinstance(packet.data, dict):
                tg.start_soon(self._handler.ephemeral, packet.data)
        elif isinstance(packet, engineio.EventIn) and packet.name == "rpc-request":
            tg.start_soon(self._answer, socket, packet)
        elif isinstance(packet, engineio.Closed):
            raise HappyServerError(f"Happy's server at {self._url} closed the socket")

    async def _answer(self, socket: WebSocket, request: engineio.EventIn) -> None:
        data = request.data if isinstance(request.data, dict) else {}
        method, params = data.get("method"), data.get("params")
        result = None
        if isinstance(method, str) and isinstance(params, str):
            result = await self._handler.rpc(method, params)
        if request.ack_id is not None:
            await socket.send(engineio.ack(request.ack_id, result))


@asynccontextmanager
async def open_updates(url: str, token: str, handler: UpdateHandler) -> AsyncIterator[Updates]:
    """The account's socket to the server at `url`, connected (retrying until it is) for the
    block; `handler` gets its traffic."""
    updates = SocketUpdates(url, token, handler)
    async with anyio.create_task_group() as tg:
        await tg.start(updates.run)
        try:
            yield updates
        finally:
            tg.cancel_scope.cancel()
