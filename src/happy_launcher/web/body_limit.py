"""The one bound on what `happy web` reads from a request: a body larger than `BODY_LIMIT` is
refused with 413, from its Content-Length before any of it is read, or as soon as a chunked one
passes the limit, never buffered whole."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from happy_launcher.control.link import MAX_REQUEST_LINE

# A larger command could not be passed on to the control socket anyway (a 1 MiB message fits in
# it with its JSON escapes).
BODY_LIMIT = MAX_REQUEST_LINE


class _TooLarge(Exception):
    """Raised out of `receive` when the body read so far passes the limit."""


def _too_large() -> JSONResponse:
    return JSONResponse({"error": "request body too large"}, status_code=413, headers={"connection": "close"})


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int = BODY_LIMIT) -> None:
        self._app = app
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._limit:
            await _too_large()(scope, receive, send)
            return
        received = 0
        started = False

        async def bounded() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self._limit:
                    raise _TooLarge
            return message

        async def watched(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, bounded, watched)
        except _TooLarge:
            if started:  # no endpoint reads its body after it began to answer
                raise
            await _too_large()(scope, receive, send)
