"""The control verbs behind `happy sessions|send|watch|switch|abort|approve|deny` (the CLI only
parses and prints). Each finds its session (`control_discovery.resolve`), then talks to its
control socket; `watch` of an ended session reads the store instead."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

from happy_launcher.control.client import ControlClient, EnvelopeBytes, connect
from happy_launcher.control.discovery import SessionView, discover, resolve, resolve_here
from happy_launcher.control.wire import AcceptedReply, Dropped, Event
from happy_launcher.errors import NoSuchSessionError, RequestRefusedError, SessionEndedError
from happy_launcher.session.ports import InputMode, Mode
from happy_launcher.store.sessions import DB_NAME, SessionStore


async def sessions(home: Path) -> list[SessionView]:
    return await discover(home)


@asynccontextmanager
async def _running(home: Path, selector: str | None) -> AsyncIterator[ControlClient]:
    view = resolve(await discover(home), selector)
    if not view.running or view.socket is None:
        raise _ended(view)
    async with connect(view.socket) as client:
        yield client


def _ended(view: SessionView) -> SessionEndedError:
    again = f": continue it with `happy claude --resume {view.claude_id}`" if view.claude_id else ""
    return SessionEndedError(f"session {view.name} has ended ({view.state}){again}")


async def send(
    home: Path, selector: str | None, text: str, message_id: str, mode: InputMode | None = None
) -> AcceptedReply:
    async with _running(home, selector) as client:
        return await client.send(message_id, text, mode)


async def switch(home: Path, selector: str | None, to: Mode) -> str | None:
    """What the session did: `switched`, `already-there` (None: an older happy did not say)."""
    async with _running(home, selector) as client:
        return (await client.switch(to)).outcome


async def abort(home: Path, selector: str | None) -> str | None:
    """What the session did: `aborted`, `no-turn` (None: an older happy did not say)."""
    async with _running(home, selector) as client:
        return (await client.abort()).outcome


async def answer(
    home: Path, selector: str | None, request_id: str | None, allow: bool, message: str | None
) -> str:
    """Answer a pending permission request (by default the only one); returns its id. A lone
    argument that names no session is the request's id, in the only running session."""
    if request_id is None and selector is not None:
        try:
            resolve(await discover(home), selector)
        except NoSuchSessionError:
            selector, request_id = None, selector
    async with _running(home, selector) as client:
        if request_id is None:
            pending = (await client.status()).pending
            if len(pending) != 1:
                listed = ", ".join(f"{p.id} ({p.title})" for p in pending)
                why = (
                    f"{len(pending)} permission requests are pending ({listed}): name one"
                    if pending
                    else ("no permission request is pending")
                )
                raise RequestRefusedError(why)
            request_id = pending[0].id
        await client.answer(request_id, allow, message)
        return request_id


class WatchOutput(Protocol):
    def envelope(self, seq: int, body: bytes) -> None: ...

    def event(self, event: Event) -> None: ...


async def watch(home: Path, selector: str | None, output: WatchOutput, *, from_start: bool, cwd: str) -> None:
    """Print a session's envelopes (its history with `from_start`), live until it ends; an ended
    session's history comes from the store. A drop (a reader too slow) is caught up from the last
    seq received, on a new connection. None named: the session of directory `cwd` (`resolve_here`)."""
    view = resolve_here(await discover(home), selector, cwd)
    last: int | None = 0 if from_start or not view.running else None
    happy_id = view.happy_id
    while view.running and view.socket is not None:
        dropped = False
        try:
            async with connect(view.socket) as client:
                happy_id = (await client.hello()).session.happy_session_id or happy_id
                await client.subscribe(last)
                async for item in client.events():
                    if isinstance(item, EnvelopeBytes):
                        output.envelope(item.seq, item.body)
                        last = item.seq
                    elif isinstance(item, Dropped):
                        dropped = True
                    else:
                        output.event(item)
        except SessionEndedError:
            pass  # it ended before we got there: the store has the rest
        if not dropped:
            break
    if happy_id is not None and last is not None:  # what was committed as the session ended
        for seq, body in _stored_after(home, happy_id, last):
            output.envelope(seq, body)


def _stored_after(home: Path, happy_id: str, after: int) -> list[tuple[int, bytes]]:
    if not (home / DB_NAME).exists():
        return []
    store = SessionStore.open(home)
    try:
        return store.raw_envelopes(happy_id, after)
    finally:
        store.close()
