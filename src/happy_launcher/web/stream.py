"""A session's stream for the page (`control/follow.py`): a `state` frame at each connection to
its control socket (facts; the open permission requests follow as `permission-requested` frames,
so a page that reconnects has them all), then every envelope after the page's last seq, then
`end` once the session is over. Beside them, an `attention` frame for what deserves a browser
notification (web/notify.py)."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

import orjson

from happy_launcher.control.client import EnvelopeBytes
from happy_launcher.control.follow import Connected, Followed, follow
from happy_launcher.control.views import SessionView
from happy_launcher.control.wire import PermissionRequested
from happy_launcher.errors import ControlError
from happy_launcher.web.notify import PageAttention, attention_json
from happy_launcher.web.sse import Emit, frame


async def session_events(
    home: Path, view: SessionView, after_seq: int, emit: Emit, attention: PageAttention
) -> None:
    last = after_seq
    try:
        async with aclosing(follow(home, view, after_seq)) as followed:
            async for item in followed:
                if isinstance(item, EnvelopeBytes):
                    last = item.seq
                await emit(_frame(item))
                if (told := attention.item(item)) is not None:
                    await emit(frame("attention", attention_json(told)))
    except ControlError:
        return  # not known to have ended: the stream closes without `end`, the page reconnects
    await emit(frame("end", orjson.dumps({"last_seq": last})))


def _frame(item: Followed) -> bytes:
    if isinstance(item, EnvelopeBytes):
        return frame("envelope", item.body, id_=item.seq)
    if isinstance(item, Connected):
        return frame("state", item.facts.model_dump_json().encode())
    if isinstance(item, PermissionRequested):
        return frame("permission-requested", item.request.model_dump_json().encode())
    return frame("permission-settled", item.model_dump_json().encode())
