"""The control verbs behind `happy sessions|send|watch|switch|abort|approve|deny` (the CLI only
parses and prints). Each finds its session (`control/views.resolve`), then talks to its
control socket; `watch` follows it (control/follow.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Protocol

from happy_launcher.control.client import ControlClient, EnvelopeBytes, connect
from happy_launcher.control.discovery import asked, discover
from happy_launcher.control.follow import Connected, follow
from happy_launcher.control.views import SessionView, resolve, resolve_here
from happy_launcher.control.wire import AcceptedReply, Event
from happy_launcher.errors import NoSuchSessionError, RequestRefusedError, SessionEndedError
from happy_launcher.session.ports import InputMode, Mode


async def sessions(home: Path) -> list[SessionView]:
    """Every session, each live launcher asked: `happy sessions` comes here only once the store
    alone could not describe them all (`from_store`), so `discover` would only look again."""
    return await asked(home)


@asynccontextmanager
async def running(view: SessionView) -> AsyncIterator[ControlClient]:
    """A connection to `view`'s session, for its actions (send, answer, switch, abort), every face's:
    the control client raises the project's errors (refused, ended, too large, protocol), and an
    ended session's says how to continue it."""
    if not view.running or view.socket is None:
        raise _ended(view)
    async with connect(view.socket) as client:
        yield client


@asynccontextmanager
async def _running(home: Path, selector: str | None) -> AsyncIterator[ControlClient]:
    async with running(resolve(await discover(home), selector)) as client:
        yield client


def _ended(view: SessionView) -> SessionEndedError:
    again = f": continue it with `happy claude --resume {view.claude_id}`" if view.claude_id else ""
    return SessionEndedError(f"session {view.name} has ended ({view.state}){again}")


async def send(
    home: Path,
    selector: str | None,
    text: str,
    message_id: str,
    mode: InputMode | None = None,
    *,
    permission_mode: str | None = None,
    model: str | None = None,
) -> AcceptedReply:
    async with _running(home, selector) as client:
        return await client.send(message_id, text, mode, permission_mode=permission_mode, model=model)


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


async def watch(
    home: Path,
    selector: str | None,
    output: WatchOutput,
    *,
    from_start: bool,
    cwd: str,
    view: SessionView | None = None,
) -> None:
    """Print a session's envelopes (its history with `from_start`), live until it ends (`follow`;
    an ended session: its history). None named: the session of directory `cwd` (`resolve_here`).
    `view`: the session, when the caller has resolved it already (from the store)."""
    view = view or resolve_here(await discover(home), selector, cwd)
    after: int | None = 0 if from_start or not view.running else None
    async with aclosing(follow(home, view, after)) as followed:
        async for item in followed:
            if isinstance(item, EnvelopeBytes):
                output.envelope(item.seq, item.body)
            elif not isinstance(item, Connected):
                output.event(item)
