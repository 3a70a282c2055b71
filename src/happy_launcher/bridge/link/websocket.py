"""One websocket to Happy's server (wsproto over an anyio TCP or TLS stream): text frames out and
in. Pings of the websocket itself are answered here; a close, EOF or a broken stream ends
`frames()`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import anyio.abc
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

from happy_launcher.errors import HappyServerError

CONNECT_TIMEOUT = 15.0  # seconds to reach the server and upgrade
READ_SIZE = 65536


class WebSocket:
    def __init__(self, stream: anyio.abc.ByteStream, ws: WSConnection, url: str) -> None:
        self._stream = stream
        self._ws = ws
        self._url = url
        self._sending = anyio.Lock()

    async def send(self, text: str) -> None:
        await self._write(self._ws.send(TextMessage(data=text)))

    async def frames(self) -> AsyncIterator[str]:
        """The server's text frames, whole, until the connection ends."""
        parts: list[str] = []
        while True:
            try:
                data = await self._stream.receive(READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return
            self._ws.receive_data(data)
            for event in self._ws.events():
                if isinstance(event, TextMessage):
                    parts.append(event.data)
                    if event.message_finished:
                        yield "".join(parts)
                        parts = []
                elif isinstance(event, Ping):
                    await self._write(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    return

    async def _write(self, data: bytes) -> None:
        async with self._sending:
            try:
                await self._stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise HappyServerError(
                    f"the connection to {self._url} broke ({type(exc).__name__})"
                ) from None


@asynccontextmanager
async def open_websocket(url: str, path: str) -> AsyncIterator[WebSocket]:
    """A websocket to `path` (with its query) on the server at `url` (http: plain, https: TLS)."""
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    host = parts.hostname or "localhost"
    port = parts.port or (443 if secure else 80)
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            stream: anyio.abc.ByteStream
            if secure:
                stream = await anyio.connect_tcp(host, port, tls=True, tls_hostname=host)
            else:
                stream = await anyio.connect_tcp(host, port)
            ws = WSConnection(ConnectionType.CLIENT)
            socket = WebSocket(stream, ws, url)
            await stream.send(ws.send(Request(host=parts.netloc, target=path)))
            await _upgraded(stream, ws, url)
    except (OSError, TimeoutError) as exc:
        raise HappyServerError(f"cannot reach Happy's server at {url} ({type(exc).__name__})") from None
    try:
        yield socket
    finally:
        with anyio.CancelScope(shield=True):
            await stream.aclose()


async def _upgraded(stream: anyio.abc.ByteStream, ws: WSConnection, url: str) -> None:
    while True:
        try:
            data = await stream.receive(READ_SIZE)
        except anyio.EndOfStream:
            raise HappyServerError(f"Happy's server at {url} closed the connection at once") from None
        ws.receive_data(data)
        for event in ws.events():
            if isinstance(event, AcceptConnection):
                return
            if isinstance(event, RejectConnection):
                raise HappyServerError(
                    f"Happy's server at {url} refused the socket (HTTP {event.status_code})"
                )
