"""Server-sent events by hand: a response whose body a producer writes frame by frame, with a
heartbeat beside it, ended when the client goes away or the producer is done."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

Emit = Callable[[bytes], Awaitable[None]]
HEARTBEAT = 15.0  # seconds between comment lines, so proxies and phones keep the stream open


def frame(event: str, data: bytes, *, id_: int | None = None) -> bytes:
    """One SSE frame; `data` is one line of JSON (compact JSON never holds a raw newline)."""
    head = f"id: {id_}\n" if id_ is not None else ""
    return f"{head}event: {event}\ndata: ".encode() + data + b"\n\n"


class SseResponse(Response):
    def __init__(
        self,
        produce: Callable[[Emit], Awaitable[None]],
        *,
        still_allowed: Callable[[], bool],
        heartbeat: float = HEARTBEAT,
    ) -> None:
        super().__init__(
            status_code=200,
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )
        # A stream has no length (Response counts the empty body as 0).
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self._produce = produce
        self._still_allowed = still_allowed  # checked at each heartbeat: a revoked device is cut off
        self._heartbeat = heartbeat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lock = anyio.Lock()

        async def emit(chunk: bytes) -> None:
            async with lock:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})

        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        with contextlib.suppress(OSError):  # the client went away mid-write
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._until_disconnect, receive, tg.cancel_scope)
                tg.start_soon(self._beat, emit, tg.cancel_scope)
                await self._produce(emit)
                tg.cancel_scope.cancel()
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _until_disconnect(self, receive: Receive, scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async def _beat(self, emit: Emit, scope: anyio.CancelScope) -> None:
        while True:
            await anyio.sleep(self._heartbeat)
            if not self._still_allowed():
                scope.cancel()
                return
            await emit(b": heartbeat\n\n")
