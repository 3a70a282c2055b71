"""Follow a session from a seq, for every face that shows one (`happy watch`, the web page's
stream): its envelopes from the control socket (history, then live: the socket's subscribe leaves
no gap and no duplicate), subscribed again after the last seq received when the session drops a
reader that fell behind, and then, once the session has ended, what it committed last (or while
nobody listened) from the store."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path

from happy_launcher.control.client import EnvelopeBytes, connect
from happy_launcher.control.history import stored_envelopes
from happy_launcher.control.views import SessionView
from happy_launcher.control.wire import Dropped, Facts, PermissionRequested, PermissionSettled
from happy_launcher.errors import SessionEndedError


@dataclass(frozen=True, slots=True)
class Connected:
    """A connection (the first, or one after a drop) greeted us: the session as it is now. The
    permission requests open now follow as `PermissionRequested`."""

    facts: Facts


Followed = EnvelopeBytes | Connected | PermissionRequested | PermissionSettled


async def follow(home: Path, view: SessionView, after_seq: int | None) -> AsyncGenerator[Followed, None]:
    """What `view`'s session holds after `after_seq` (None: only what is committed from now),
    until it has ended. Control errors other than the session's end are raised (the face decides
    what to tell). Iterate it under `contextlib.aclosing`: a face that stops early closes the
    connection at once."""
    last, happy_id = after_seq, view.happy_id
    while view.running and view.socket is not None:
        dropped = False
        try:
            async with connect(view.socket) as client:
                facts = (await client.hello()).session
                happy_id = facts.happy_session_id or happy_id
                yield Connected(facts)
                await client.subscribe(last)
                async for item in client.events():
                    if isinstance(item, Dropped):
                        dropped = True  # we read too slowly: subscribe again from `last`
                    elif isinstance(item, EnvelopeBytes):
                        last = item.seq
                        yield item
                    elif isinstance(item, PermissionRequested | PermissionSettled):
                        yield item
        except SessionEndedError:
            pass  # it ended before we got there, or meanwhile: the store has the rest
        if not dropped:
            break
    if happy_id is not None and last is not None:
        async for envelope in _stored(home, happy_id, last):
            yield envelope


async def _stored(home: Path, happy_id: str, last: int) -> AsyncGenerator[EnvelopeBytes, None]:
    for seq, body in stored_envelopes(home, happy_id, last):
        yield EnvelopeBytes(seq, body)
