"""A connected Unix socket, for the control server and its clients: non-blocking, waited on with
`anyio.wait_readable`/`wait_writable`.

Not anyio's own UNIX socket streams: on asyncio, cancelling one of their reads (or accepts) just
as data arrives makes the event loop log an InvalidStateError (anyio issue #1267), and stopping
a server is exactly such a cancellation."""

from __future__ import annotations

import errno
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

_RECEIVE = 1 << 16
# The server's limits, here (light to import) so that the listener loads no more than this.
# Bytes, newline excluded: room for a `send` of the largest message (control_types.MAX_MESSAGE, 1 MiB)
# with its JSON escapes (a quote or a line break takes two bytes).
MAX_REQUEST_LINE = 3 << 20
OUTBOX_LIMIT = 8 << 20  # bytes queued for one client before it is dropped
DROP_GRACE = 2.0  # seconds a dropped client has to read its `dropped` line


class LinkClosed(Exception):
    """The other end is gone (or this end was closed)."""


class Link:
    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.socket = sock

    async def receive(self) -> bytes:
        """The next bytes; b"" once the other end has closed (or reset) the connection."""
        while True:
            try:
                return self.socket.recv(_RECEIVE)
            except BlockingIOError:
                await _wait(anyio.wait_readable, self.socket)
            except (ConnectionResetError, BrokenPipeError):
                return b""
            except OSError as exc:
                raise LinkClosed(str(exc)) from exc

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[self.socket.send(view) :]
            except BlockingIOError:
                await _wait(anyio.wait_writable, self.socket)
            except OSError as exc:
                raise LinkClosed(str(exc)) from exc

    def send_now(self, data: bytes) -> int:
        """What the socket takes of `data` at once, without waiting: 0 if it is full or failed
        (`send` then meets the failure)."""
        try:
            return self.socket.send(data)
        except OSError:
            return 0

    def close(self) -> None:
        self.socket.close()


async def _wait(wait: Callable[[socket.socket], Awaitable[None]], sock: socket.socket) -> None:
    try:
        await wait(sock)
    except (anyio.ClosedResourceError, ValueError) as exc:  # closed meanwhile (fileno -1)
        raise LinkClosed("the connection was closed") from exc


async def accept(listener: socket.socket) -> socket.socket:
    """The next connection on a listening (non-blocking) socket."""
    while True:
        try:
            sock, _ = listener.accept()
        except BlockingIOError:
            await anyio.wait_readable(listener)
        else:
            return sock


async def connect(address: str) -> Link:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        try:
            sock.connect(address)
        except BlockingIOError:  # the server's backlog is full: wait for room
            await anyio.wait_writable(sock)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, errno.errorcode.get(code, str(code))) from None
    except BaseException:
        sock.close()
        raise
    return Link(sock)


async def cancel_on(event: anyio.Event, scope: anyio.CancelScope) -> None:
    """Cancel `scope` once `event` is set (a graceful stop of what runs inside it)."""
    await event.wait()
    scope.cancel()


@dataclass(frozen=True, slots=True)
class ServerLimits:
    max_line: int = MAX_REQUEST_LINE  # request bytes, newline excluded
    outbox: int = OUTBOX_LIMIT  # bytes queued for one client before it is dropped
    grace: float = DROP_GRACE  # seconds to send a last line to a client being let go
