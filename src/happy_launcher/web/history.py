"""A long session's history for the page, a window at a time (static/earlier.js): the stream
starts with the newest `tail` envelopes, and the page asks for older ones page by page, each
read by keyset from the store, so neither the server nor the page holds the whole history."""

from __future__ import annotations

from pathlib import Path

from happy_launcher.store.sessions import DB_NAME, SessionStore

MAX_PAGE = 1000  # envelopes in one answer, at most


def window_start(home: Path, happy_id: str, tail: int) -> int:
    """The seq after which a stream showing the newest `tail` envelopes starts."""
    if not (home / DB_NAME).exists():
        return 0
    with SessionStore.open(home) as store:
        return max(0, store.last_seq(happy_id) - tail)


def earlier(home: Path, happy_id: str, before: int, limit: int) -> bytes:
    """`{"envelopes": [[seq, envelope], ...]}`: up to `limit` envelopes just before seq `before`,
    oldest first, each envelope exactly as stored."""
    rows: list[tuple[int, bytes]] = []
    if (home / DB_NAME).exists():
        with SessionStore.open(home) as store:
            rows = store.raw_envelopes_before(happy_id, before, min(limit, MAX_PAGE))
    items = b",".join(b"[%d,%s]" % (seq, body) for seq, body in rows)
    return b'{"envelopes":[' + items + b"]}"
