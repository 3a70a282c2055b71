"""A session's stream for the page, from its control socket: a `state` frame (facts; the open
permission requests follow as `permission-requested` frames, so a page that reconnects has them
all), then every envelope after the page's last seq (history, then live: the socket's subscribe
leaves no gap and no duplicate), then `end` once the session is over. Envelopes committed as a
session ends, or while nobody listened, come from the store."""

from __future__ import annotations

from pathlib import Path

import orjson

from happy_launcher.control.client import EnvelopeBytes, connect
from happy_launcher.control.discovery import SessionView
from happy_launcher.control.wire import Dropped, PermissionRequested, PermissionSettled
from happy_launcher.errors import ControlError, SessionEndedError
from happy_launcher.store.sessions import DB_NAME, SessionStore
from happy_launcher.web.sse import Emit, frame

STORE_PAGE = 2000  # envelopes read from the store per query


async def session_events(home: Path, view: SessionView, after_seq: int, emit: Emit) -> None:
    last = after_seq
    if view.running and view.socket is not None:
        try:
            last = await _live(view.socket, last, emit)
        except ControlError:
            return  # not known to have ended: the stream closes without `end`, the page reconnects
    if view.happy_id is not None:
        last = await _stored(home, view.happy_id, last, emit)
    await emit(frame("end", orjson.dumps({"last_seq": last})))


async def _live(socket: Path, last: int, emit: Emit) -> int:
    """Envelopes from the session's socket until it ends; returns the last seq sent."""
    while True:
        dropped = False
        try:
            async with connect(socket) as client:
                facts = (await client.hello()).session
                await emit(frame("state", facts.model_dump_json().encode()))
                await client.subscribe(last)
                async for item in client.events():
                    if isinstance(item, EnvelopeBytes):
                        await emit(frame("envelope", item.body, id_=item.seq))
                        last = item.seq
                    elif isinstance(item, PermissionRequested):
                        await emit(frame("permission-requested", item.request.model_dump_json().encode()))
                    elif isinstance(item, PermissionSettled):
                        await emit(frame("permission-settled", item.model_dump_json().encode()))
                    elif isinstance(item, Dropped):
                        dropped = True  # we read too slowly: subscribe again from `last`
        except SessionEndedError:
            return last
        if not dropped:
            return last


async def _stored(home: Path, happy_id: str, last: int, emit: Emit) -> int:
    if not (home / DB_NAME).exists():
        return last
    while True:
        store = SessionStore.open(home)
        try:
            rows = store.raw_envelopes(happy_id, last, STORE_PAGE)
        finally:
            store.close()
        for seq, body in rows:
            await emit(frame("envelope", body, id_=seq))
            last = seq
        if len(rows) < STORE_PAGE:
            return last
