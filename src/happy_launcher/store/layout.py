"""Where a session's data lives: its own database, beside the registry (issue 20).

`sessions.db` is the registry: every session's row (status, launcher, Claude sessions, front end)
and its links to Happy's server, written a few times in a session's life. What a session writes
with each record (envelopes, processed keys, the mapper state, inbound messages, history marks)
is in `sessions/<id>.db`, a database with the same schema holding that one session, so that
sessions committing at the same moment never wait for each other's write lock. A session made
by an older happy keeps its data in the registry's own tables (its row's `own_data` is NULL),
where it is read and written as before.

When a session ends, the registry notes what a listing shows of it (its last seq, last
activity and first prompt: `Tail`), so listing ended sessions opens none of their databases.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, NamedTuple, Self
from urllib.parse import quote

from happy_launcher.errors import StoreError
from happy_launcher.home.dirs import ensure_home
from happy_launcher.store import warn
from happy_launcher.store.conn import StoreConnection

DATA_DIR_NAME = "sessions"
# Sessions' own databases one store keeps open, the least recently asked for closed first: a
# reader of many sessions (the bridge sending histories) would otherwise hold 3 descriptors each.
OPEN_SESSIONS = 32
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_BODY = "CAST(body AS TEXT)"  # JSON text: a BLOB would be read as SQLite's binary JSON


def first_prompt_sql(session: str) -> str:
    """The text of the first user message of `session` (an SQL expression: `?` or a column):
    the envelopes are read in seq order until it, so usually a few of them."""
    return (
        f"SELECT json_extract({_BODY}, '$.ev.text') FROM envelopes WHERE session = {session} "
        f"AND json_extract({_BODY}, '$.role') = 'user' AND json_extract({_BODY}, '$.ev.t') = 'text' "
        "ORDER BY seq LIMIT 1"
    )


class Tail(NamedTuple):
    """What a listing shows of a session's envelopes."""

    last_seq: int  # 0: none
    last_activity: int | None  # the time of its last envelope
    first_prompt: str | None


def data_path(registry: Path, session_id: str) -> Path:
    if not _SAFE_ID.fullmatch(session_id):  # ids are ours (cuid2); never a path from outside
        raise StoreError(f"{session_id!r} is not a session id (a bug in happy: please report it)")
    return registry.parent / DATA_DIR_NAME / f"{session_id}.db"


def last_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The seq of the session's last envelope (0: none yet)."""
    (last,) = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM envelopes WHERE session = ?", (session_id,)
    ).fetchone()
    return int(last)


def read_tail(conn: sqlite3.Connection, session_id: str) -> Tail:
    last = conn.execute(
        "SELECT seq, time FROM envelopes WHERE session = ? ORDER BY seq DESC LIMIT 1", (session_id,)
    ).fetchone()
    prompt = conn.execute(first_prompt_sql("?"), (session_id,)).fetchone()
    return Tail(
        0 if last is None else int(last[0]),
        None if last is None else int(last[1]),
        None if prompt is None else prompt[0],
    )


class OwnDatabases(StoreConnection):
    """The registry's side of the layout: each session's data reached through `_on`, its own
    database opened on first use and kept open (at most `OPEN_SESSIONS`). A caller holds a
    database for the time of its block (a lease), so one closed for room closes only once no
    caller is in it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # StoreConnection's
        super().__init__(*args, **kwargs)
        self._own: dict[str, Self] = {}  # open, the most recently asked for last
        self._in_registry: set[str] = set()  # sessions of an older happy: their data is here
        self._own_lock = threading.Lock()  # the maps and leases; the only I/O under it: open, close
        self._one_session = False  # this is a session's own database: all its data is here
        self._leases = 0  # callers in this (own) database now
        self._retired = False  # closed for room: closes when its last lease ends

    def close(self) -> None:
        with self._own_lock:
            own, self._own = list(self._own.values()), {}
        for store in own:
            store.close()
        super().close()

    @contextmanager
    def _on(self, session_id: str) -> Iterator[Self]:
        store = self._lease(session_id)
        try:
            yield store
        finally:
            if store is not self:
                self._release(store)

    @contextmanager
    def _new_own(self, session_id: str) -> Iterator[Self]:
        """A new session's database, made and held; forgotten and closed if the block fails."""
        with self._own_lock:
            store = self._open_own(session_id, new=True)
        try:
            yield store
        except BaseException:
            with self._own_lock:
                if self._own.get(session_id) is store:
                    del self._own[session_id]
                store._retired = True
            raise
        finally:
            self._release(store)

    def data_file(self, session_id: str) -> Path:
        """The database file that holds the session's envelopes: its own, or the registry."""
        with self._on(session_id) as data:
            return data.path

    def _tail(self, session_id: str) -> Tail | None:
        """What a listing shows of a session with its own database (None: an older one's)."""
        with self._on(session_id) as data:
            if data is self:
                return None
            with data._read() as conn:
                return read_tail(conn, session_id)

    def _glance(self, session_id: str) -> Tail | None:
        """`_tail` of a running session with its own database, by one look that keeps nothing
        open (a listing of many); None when its database cannot be read (said in the log)."""
        path = data_path(self.path, session_id)
        try:
            with closing(sqlite3.connect(f"file:{quote(str(path))}?mode=rw", uri=True)) as conn:
                return read_tail(conn, session_id)
        except sqlite3.Error as exc:
            warn("session %s: %s cannot be read (%s); listed without its activity", session_id, path, exc)
            return None

    def _lease(self, session_id: str) -> Self:
        if self._one_session or session_id in self._in_registry:
            return self
        with self._own_lock:
            store = self._own.pop(session_id, None)
            if store is not None:
                self._own[session_id] = store
                store._leases += 1
                return store
        with self._read() as conn:
            row = conn.execute("SELECT own_data FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None or not row[0]:  # an unknown one: the registry's own checks say so
            if row is not None:
                self._in_registry.add(session_id)
            return self
        with self._own_lock:
            if (store := self._own.get(session_id)) is None:
                return self._open_own(session_id, new=False)
            store._leases += 1  # another caller opened it meanwhile
            return store

    def _open_own(self, session_id: str, *, new: bool) -> Self:
        """Open the session's database, held once (under `_own_lock`), and make room for it.
        Only a new session's is made: an empty one in place of a lost one would hide the loss."""
        path = data_path(self.path, session_id)
        if new:
            ensure_home(path.parent)
        elif not path.exists():
            raise StoreError(
                f"{path} is missing: the history of session {session_id} is gone; "
                "restore the file, or start a new session"
            )
        store = self._open_file(path, self._busy_timeout, self._checkpoint_idle)
        store._one_session, store._leases = True, 1
        self._own[session_id] = store
        while len(self._own) > OPEN_SESSIONS:
            oldest = self._own.pop(next(iter(self._own)))
            oldest._retired = True
            if oldest._leases == 0:
                oldest.close()
        return store

    def _release(self, store: Self) -> None:
        with self._own_lock:
            store._leases -= 1
            closing = store._retired and store._leases == 0
        if closing:
            store.close()
