"""A session's committed envelopes after a seq, read from the store page by page (bounded memory
at any length of history): what `follow` gives once a session has ended, and all that `happy
watch` of an ended session needs (no event loop, no control client)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from happy_launcher.store.sessions import DB_NAME, SessionStore

FIRST_PAGE = 100  # a small first read: the first line of a long history comes at once
STORE_PAGE = 2000  # envelopes read from the store per query after it


def stored_envelopes(home: Path, happy_id: str, after_seq: int) -> Iterator[tuple[int, bytes]]:
    """(seq, envelope JSON) after `after_seq`, in seq order. The store is opened for each page, so
    no read is held open while a slow reader takes its time."""
    if not (home / DB_NAME).exists():
        return
    last, page = after_seq, FIRST_PAGE
    while True:
        with SessionStore.open(home) as store:
            rows = store.raw_envelopes(happy_id, last, page)
        yield from rows
        if len(rows) < page:
            return
        last, page = rows[-1][0], STORE_PAGE
