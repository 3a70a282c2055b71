"""What the page tells as browser notifications (control/attention.py's events: a permission
asked, a question, a long turn's end, a failure), computed beside a session's stream, for the
page to show while it is open.

The stream replays a session's history first: only what happens from the stream's start on is
told (an envelope of that history is still fed in, so a long turn under way is timed from its
start). An open permission request comes again at each reconnection of the control socket: it is
told once per stream, and the page keys on `key` across streams. A session not titled yet when
the stream starts is named by its first prompt once it comes (as its title would be)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import orjson

from happy_launcher.control.attention import Attention, AttentionTracker
from happy_launcher.control.client import EnvelopeBytes
from happy_launcher.control.follow import Followed
from happy_launcher.control.wire import PermissionRequested
from happy_launcher.protocol.envelope import parse_envelope
from happy_launcher.session.naming import one_line


class PageAttention:
    """`since_ms`: when the stream started (envelopes' own clock, ms since the epoch); `titled`:
    whether the tracker's title is the session's own (else its folder's name, for now)."""

    def __init__(self, tracker: AttentionTracker, since_ms: int, *, titled: bool) -> None:
        self._tracker = tracker
        self._since = since_ms
        self._titled = titled
        self._told: set[str] = set()
        self._turns: set[str] = set()  # turns whose first envelope the tracker has had

    def item(self, item: Followed) -> Attention | None:
        if isinstance(item, PermissionRequested):
            return self._once(self._tracker.permission(item.request))
        if isinstance(item, EnvelopeBytes):
            return self._envelope(item.body)
        return None

    def _envelope(self, body: bytes) -> Attention | None:
        # Only a turn's first envelope (its start time) and its end matter: the others are not
        # validated again (a long session's history is replayed at each page load).
        head: dict[str, Any] = orjson.loads(body)
        ev = head.get("ev") or {}
        turn, kind = head.get("turn"), ev.get("t")
        if not self._titled and head.get("role") == "user" and kind == "text":
            self._titled = True
            self._tracker.title = one_line(str(ev.get("text") or "")) or self._tracker.title
        if not isinstance(turn, str) or (turn in self._turns and kind != "turn-end"):
            return None
        self._turns.add(turn)
        envelope = parse_envelope(body)
        told = self._tracker.envelope(envelope, envelope.time / 1000)
        if kind == "turn-end":
            self._turns.discard(turn)
        return self._once(told) if envelope.time >= self._since else None

    def _once(self, attention: Attention | None) -> Attention | None:
        if attention is None or attention.key in self._told:
            return None
        self._told.add(attention.key)
        return attention


def attention_json(attention: Attention) -> bytes:
    return orjson.dumps(asdict(attention))
