"""The `happy web` application: the page (static files) and its small API. Every API call but
pairing needs a device token (`Authorization: Bearer`, never in a URL); every POST, the stream
included, must carry this server's own Origin; every request must name an allowed Host."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from happy_launcher.control.attention import AttentionTracker
from happy_launcher.control.attention import session_title as attention_title
from happy_launcher.control.discovery import discover
from happy_launcher.control.views import SessionView
from happy_launcher.errors import HappyError
from happy_launcher.session.naming import TranscriptTitles, session_title
from happy_launcher.web.auth import Pairing, bearer, origin_ok
from happy_launcher.web.body_limit import BodyLimit
from happy_launcher.web.commands import Commands, parse
from happy_launcher.web.devices import Device, DeviceStore
from happy_launcher.web.hidden import HiddenSessions
from happy_launcher.web.history import MAX_PAGE, earlier, window_start
from happy_launcher.web.notify import PageAttention
from happy_launcher.web.spawning import Starter, choices, parse_new, parse_options, resume, start
from happy_launcher.web.sse import SseResponse
from happy_launcher.web.stream import session_events

STATIC = Path(__file__).parent / "static"
SESSIONS_SHOWN = 30  # ended sessions are listed after the running ones, up to this many in all
HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}


@dataclass
class WebState:
    home: Path
    devices: DeviceStore
    pairing: Pairing
    hosts: frozenset[str]
    pair_url: Callable[[str], str]  # the page's URL carrying a pairing secret
    commands: Commands
    hidden: HiddenSessions
    starter: Starter  # new sessions and resumed ones (spawn/spawner.py's Spawner)
    user_home: Path  # the form's default directory, when allowed
    titles: TranscriptTitles = field(default_factory=TranscriptTitles)  # kept: transcripts read on


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _state(request: Request) -> WebState:
    state: WebState = request.app.state.web
    return state


def _guard(request: Request, *, post: bool) -> Device | Response:
    """The device making the request, or the refusal: 403 for a foreign Origin, 401 (nothing
    more said) for a missing, wrong or revoked token."""
    if (post or "origin" in request.headers) and not origin_ok(
        request.headers.get("origin"), request.headers.get("host", "")
    ):
        return _error(403, "forbidden")
    device = _state(request).devices.verify(bearer(request.headers.get("authorization")))
    return device if device is not None else _error(401, "unauthorized")


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html")


async def pair(request: Request) -> Response:
    state = _state(request)
    if not origin_ok(request.headers.get("origin"), request.headers.get("host", "")):
        return _error(403, "forbidden")
    if not state.pairing.allow_attempt(request.client.host if request.client else ""):
        return JSONResponse({"error": "too many attempts"}, status_code=429, headers={"retry-after": "60"})
    try:
        body = orjson.loads(await request.body())
        secret, name = str(body["secret"]), str(body.get("name") or "device")
    except (ValueError, KeyError, TypeError):
        return _error(400, "bad request")
    if not state.pairing.consume(secret):
        return _error(401, "unauthorized")
    device, token = state.devices.add(name)
    return JSONResponse({"token": token, "device": device.id, "name": device.name})


async def pair_new(request: Request) -> Response:
    """A new one-time link (and its QR) for another device, minted from a paired page."""
    device = _guard(request, post=True)
    if isinstance(device, Response):
        return device
    import segno

    state = _state(request)
    url = state.pair_url(state.pairing.mint())
    return JSONResponse({"url": url, "qr": segno.make(url, error="m").svg_data_uri(scale=4, border=2)})


async def sessions(request: Request) -> Response:
    """The sessions to list, each with its title, and whether it is hidden: up to SESSIONS_SHOWN
    shown ones, and as many hidden ones (for the page's "hidden" group)."""
    device = _guard(request, post=False)
    if isinstance(device, Response):
        return device
    state = _state(request)
    views = [v for v in await discover(state.home) if v.happy_id is not None]
    hidden = state.hidden.hidden(v.happy_id for v in views if v.running and v.happy_id)
    shown = [v for v in views if v.happy_id not in hidden][:SESSIONS_SHOWN]
    listed = shown + [v for v in views if v.happy_id in hidden][:SESSIONS_SHOWN]
    # Titles read transcripts (only what was added since the last call): off the event loop.
    titles = await anyio.to_thread.run_sync(
        lambda: [session_title(v.first_prompt, v.transcript, state.titles) for v in listed]
    )
    return JSONResponse([_listed(v, t, v.happy_id in hidden) for v, t in zip(listed, titles, strict=True)])


def _listed(view: SessionView, title: str | None, hidden: bool) -> dict[str, Any]:
    return {
        "id": view.happy_id,
        "claude_id": view.claude_id,
        "title": title,
        "state": view.state,
        "mode": view.mode,
        "cwd": view.cwd,
        "started_at": view.started_at,
        "last_activity": view.last_activity,
        "hidden": hidden,
    }


async def visibility(request: Request) -> Response:
    """Hide an ended session from the list, or show it again: `{"hidden": true|false}`."""
    device = _guard(request, post=True)
    if isinstance(device, Response):
        return device
    try:
        hidden = orjson.loads(await request.body())["hidden"]
    except (ValueError, KeyError, TypeError):
        hidden = None
    if not isinstance(hidden, bool):
        return _error(400, 'bad request: send {"hidden": true} or {"hidden": false}')
    view = await _session(request)
    if isinstance(view, Response):
        return view
    if hidden and view.running:
        return _error(409, f"session {view.name} is running: only an ended session can be hidden")
    _state(request).hidden.set(request.path_params["session"], hidden)
    return JSONResponse({"ok": True, "hidden": hidden})


async def _session(request: Request) -> SessionView | Response:
    wanted = request.path_params["session"]
    for view in await discover(_state(request).home):
        if view.happy_id == wanted:
            return view
    return _error(404, "no such session")


async def stream(request: Request) -> Response:
    device = _guard(request, post=True)
    if isinstance(device, Response):
        return device
    view = await _session(request)
    if isinstance(view, Response):
        return view
    try:
        after = max(0, int(request.headers.get("last-event-id") or 0))
        tail = max(0, int(request.query_params.get("tail") or 0))
    except ValueError:
        return _error(400, "bad Last-Event-ID or tail")
    state = _state(request)
    if after == 0 and tail and view.happy_id is not None:  # a first look: the newest `tail` only
        after = await anyio.to_thread.run_sync(window_start, state.home, view.happy_id, tail)
    attention = await _attention(state, view)
    return SseResponse(
        lambda emit: session_events(state.home, view, after, emit, attention),
        still_allowed=lambda: state.devices.verify_id(device.id),
    )


async def envelopes(request: Request) -> Response:
    """`?before=<seq>&limit=<n>`: the envelopes just before `before`, for the page's window."""
    device = _guard(request, post=False)
    if isinstance(device, Response):
        return device
    view = await _session(request)
    if isinstance(view, Response):
        return view
    try:
        before = int(request.query_params["before"])
        limit = max(1, int(request.query_params.get("limit") or MAX_PAGE))
    except (KeyError, ValueError):
        return _error(400, "give before=<seq> (and limit=<n>)")
    if view.happy_id is None:
        return Response(b'{"envelopes":[]}', media_type="application/json")
    body = await anyio.to_thread.run_sync(earlier, _state(request).home, view.happy_id, before, limit)
    return Response(body, media_type="application/json")


async def _attention(state: WebState, view: SessionView) -> PageAttention:
    title = await anyio.to_thread.run_sync(session_title, view.first_prompt, view.transcript, state.titles)
    tracker = AttentionTracker(view.happy_id or "", title=attention_title(title, view.cwd))
    return PageAttention(tracker, clock_ms(), titled=title is not None)


async def command(request: Request) -> Response:
    device = _guard(request, post=True)
    if isinstance(device, Response):
        return device
    parsed = parse(await request.body())
    if isinstance(parsed, str):
        return _error(400, parsed)
    view = await _session(request)
    if isinstance(view, Response):
        return view
    status, body = await _state(request).commands.run(device.id, view, parsed)
    return JSONResponse(body, status_code=status)


async def spawn_choices(request: Request) -> Response:
    device = _guard(request, post=False)
    if isinstance(device, Response):
        return device
    state = _state(request)
    return JSONResponse(await choices(state.home, state.user_home))


async def spawn(request: Request) -> Response:
    """A new session (`{"directory", "prompt", "model", "permission_mode"}`): its id once it is
    ready for a prompt, or why not."""
    device = _guard(request, post=True)
    if isinstance(device, Response):
        return device
    new = parse_new(await request.body())
    if isinstance(new, str):
        return _error(400, new)
    status, body = await start(_state(request).starter, new)
    return JSONResponse(body, status_code=status)


async def resume_session(request: Request) -> Response:
    """An ended session continued (`{"model", "permission_mode"}`, both optional)."""
    device = _guard(request, post=True)
    if isinstance(device, Response):
        return device
    options = parse_options(await request.body())
    if isinstance(options, str):
        return _error(400, options)
    view = await _session(request)
    if isinstance(view, Response):
        return view
    if view.running:
        return _error(409, f"session {view.name} is running: only an ended session can be resumed")
    status, body = await resume(_state(request).starter, request.path_params["session"], options)
    return JSONResponse(body, status_code=status)


class Guarded:
    """Refuses a request whose Host is not allowed (DNS rebinding), adds the security headers to
    every answer, and turns a store failure into a plain 500 that says nothing else."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self._app = app
        self._hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
        if host not in self._hosts:
            await PlainTextResponse("unknown host", status_code=421, headers=HEADERS)(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_RAW_HEADERS]
            await send(message)

        try:
            await self._app(scope, receive, with_headers)
        except HappyError:
            await PlainTextResponse("server error", status_code=500)(scope, receive, send)


_RAW_HEADERS = [(k.encode(), v.encode()) for k, v in HEADERS.items()]


def make_app(state: WebState) -> Starlette:
    routes = [
        Route("/", index),
        Route("/api/pair", pair, methods=["POST"]),
        Route("/api/pair/new", pair_new, methods=["POST"]),
        Route("/api/sessions", sessions),
        Route("/api/sessions/{session}/stream", stream, methods=["POST"]),
        Route("/api/sessions/{session}/envelopes", envelopes),
        Route("/api/sessions/{session}/command", command, methods=["POST"]),
        Route("/api/sessions/{session}/hidden", visibility, methods=["POST"]),
        Route("/api/sessions/{session}/resume", resume_session, methods=["POST"]),
        Route("/api/spawn", spawn_choices),
        Route("/api/spawn", spawn, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC)),
    ]
    app = Starlette(routes=routes)
    app.state.web = state
    app.add_middleware(BodyLimit)
    app.add_middleware(Guarded, hosts=state.hosts)  # the outer one: its headers go on every answer
    return app


def clock_ms() -> int:
    return time.time_ns() // 1_000_000
