"""The durable session store: SQLite files under HAPPY_HOME_DIR (design §5): the registry
`sessions.db` and a database per session (store/layout.py).

Every envelope is stored before it is delivered, so a crash or restart loses nothing and
resends nothing. WAL mode lets the CLI verbs (`sessions`, `watch`) read from their own
connection while a launcher writes. `synchronous=NORMAL` means a commit survives a crash of
the launcher (the case that matters) though not necessarily a power cut, and costs no fsync;
checkpoints (which do) run in a background thread (`checkpoint.py`), not inside commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from happy_launcher.errors import StoreConflictError
from happy_launcher.home.dirs import ensure_home
from happy_launcher.home.procs import ProcessId
from happy_launcher.store.checkpoint import CHECKPOINT_IDLE
from happy_launcher.store.envelopes import insert
from happy_launcher.store.happy_links import HappyLinkStore
from happy_launcher.store.layout import OwnDatabases, Tail, first_prompt_sql, read_tail
from happy_launcher.store.resume import ResumeStore
from happy_launcher.store.schema import (
    session_next_seq,
    update_session,
)

if TYPE_CHECKING:
    from happy_launcher.protocol import Envelope

DB_NAME = "sessions.db"


class SessionInfo(NamedTuple):
    id: str
    claude_session_id: str | None  # the current one; history is in `claude_sessions`
    cwd: str
    started_at: int
    ended_at: int | None
    status: str


class SessionSummary(NamedTuple):
    info: SessionInfo
    owner: ProcessId | None  # its launcher (while it runs)
    last_activity: int | None  # the time of its last envelope
    continuity_break: str | None = None  # why the conversation broke at a switch, if it did
    first_prompt: str | None = None  # the text of its first user message (for its title)
    transcript: str | None = None  # the transcript of its current Claude session, when known
    mode: str | None = None  # its front end, as its launcher last said (None: not said)
    terminal: bool | None = None  # whether the run has a terminal, as its launcher said


_SESSION_COLUMNS = "id, claude_session_id, cwd, started_at, ended_at, status"
# What a listing shows of a session's envelopes: noted in its row once it ended, read from the
# registry's tables for a session of an older happy (own_data NULL).
_LEGACY = "s.own_data IS NULL"
_LAST_ACTIVITY = (
    f"CASE WHEN {_LEGACY} THEN (SELECT time FROM envelopes e WHERE e.session = s.id "
    "ORDER BY e.seq DESC LIMIT 1) ELSE s.last_activity END"
)
_FIRST_PROMPT = f"CASE WHEN {_LEGACY} THEN ({first_prompt_sql('s.id')}) ELSE s.first_prompt END"
_TRANSCRIPT = (
    "(SELECT transcript_path FROM claude_sessions c WHERE c.happy_session = s.id "
    "AND c.claude_session_id = s.claude_session_id AND transcript_path IS NOT NULL "
    "ORDER BY c.seen_at DESC, c.rowid DESC LIMIT 1)"
)


class SessionStore(OwnDatabases, HappyLinkStore, ResumeStore):
    """The store's operations: the sessions' rows here; where each session's data lives
    (`OwnDatabases`), its envelopes (`EnvelopeStore`, under the links), what a later run resumes with
    (`ResumeStore`), the links to Happy's server (`HappyLinkStore`); see `StoreConnection` for
    the connection and transactions."""

    @classmethod
    def open(
        cls, home: Path, *, busy_timeout: float = 5.0, checkpoint_idle: float = CHECKPOINT_IDLE
    ) -> SessionStore:
        """Open (creating if needed) `<home>/sessions.db`; `home` is created 0700, the file 0600.
        A session's own database is opened when it is first asked for."""
        return cls._open_file(ensure_home(home) / DB_NAME, busy_timeout, checkpoint_idle)

    # --- sessions -----------------------------------------------------------------------------

    def create_session(
        self,
        session_id: str,
        *,
        cwd: str,
        started_at: int,
        status: str = "running",
        owner: ProcessId | None = None,
    ) -> None:
        """`owner`: the launcher process; the session counts as running only while it lives."""
        pid, start = (owner.pid, owner.start) if owner is not None else (None, None)
        with self._new_own(session_id) as own:
            with own._write() as conn:  # its row there holds the mapper state
                conn.execute(
                    "INSERT INTO sessions (id, cwd, started_at, status) VALUES (?, ?, ?, ?)",
                    (session_id, cwd, started_at, status),
                )
            with self._write() as conn:
                conn.execute(
                    "INSERT INTO sessions (id, cwd, started_at, status, pid, pid_start, own_data) "
                    "VALUES (?, ?, ?, ?, ?, ?, 1)",
                    (session_id, cwd, started_at, status, pid, start),
                )

    def reopen_session(self, session_id: str, *, owner: ProcessId | None = None) -> None:
        """Continue an ended session (`happy claude --resume`): running again, under `owner`."""
        pid, start = (owner.pid, owner.start) if owner is not None else (None, None)
        with self._write() as conn:
            update_session(
                conn,
                session_id,
                # The new launcher says its front end itself (an older happy does not: unknown).
                "status = 'running', ended_at = NULL, pid = ?, pid_start = ?, mode = NULL, terminal = NULL",
                (pid, start),
            )

    def note_front(self, session_id: str, mode: str, *, terminal: bool) -> None:
        """The running session's front end (`happy sessions` shows it; its launcher writes it
        as the session is bound and at each switch)."""
        with self._write() as conn:
            update_session(conn, session_id, "mode = ?, terminal = ?", (mode, int(terminal)))

    def running_sessions(self) -> list[tuple[str, ProcessId | None]]:
        """(id, launcher process) of every session marked running."""
        with self._read() as conn:
            rows = conn.execute("SELECT id, pid, pid_start FROM sessions WHERE status = 'running'")
            return [(sid, None if pid is None else ProcessId(pid, start)) for sid, pid, start in rows]

    def end_session(self, session_id: str, status: str, ended_at: int) -> None:
        tail = self._tail(session_id)  # read first: no session waits on the registry meanwhile
        with self._write() as conn:
            update_session(conn, session_id, "status = ?, ended_at = ?", (status, ended_at))
            _note_tail(conn, session_id, tail)

    def record_claude_session(
        self,
        session_id: str,
        claude_session_id: str,
        *,
        source: str,
        seen_at: int,
        transcript_path: str | None,
    ) -> None:
        """Remember that the session went through a Claude session id, and make it the current one."""
        with self._write() as conn:
            update_session(conn, session_id, "claude_session_id = ?", (claude_session_id,))
            conn.execute(
                "INSERT INTO claude_sessions VALUES (?, ?, ?, ?, ?)",
                (session_id, claude_session_id, transcript_path, source, seen_at),
            )

    def note_break(self, session_id: str, text: str) -> None:
        """The conversation broke across a switch (session/continuity.py): kept for `sessions`."""
        with self._write() as conn:
            update_session(conn, session_id, "continuity_break = ?", (text,))

    def continuity_break(self, session_id: str) -> str | None:
        with self._read() as conn:
            row = conn.execute("SELECT continuity_break FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return None if row is None else row[0]

    def save_mapper_state(self, session_id: str, state_json: str) -> None:
        with self._session_write(session_id) as conn:
            update_session(conn, session_id, "mapper_state = ?", (state_json,))

    def load_mapper_state(self, session_id: str) -> str | None:
        with self._on(session_id) as data, data._read() as conn:
            row = conn.execute("SELECT mapper_state FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise StoreConflictError(f"no session {session_id} in {data.path}")
        state: str | None = row[0]
        return state

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently started first."""
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY started_at DESC, id")
            return [SessionInfo(*row) for row in rows]

    def session_summaries(self) -> list[SessionSummary]:
        """All sessions with their launcher, last activity, first prompt and current transcript,
        most recently started first. Only running sessions' own databases are read."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS}, pid, pid_start, {_LAST_ACTIVITY}, continuity_break, "
                f"{_FIRST_PROMPT}, {_TRANSCRIPT}, mode, terminal, s.own_data AND s.status = 'running' "
                "FROM sessions s ORDER BY started_at DESC, id"
            ).fetchall()
        out = []
        for row in rows:
            tail = self._glance(row[0]) if row[14] else None
            out.append(
                SessionSummary(
                    SessionInfo(*row[:6]),
                    None if row[6] is None else ProcessId(row[6], row[7]),
                    last_activity=row[8] if tail is None else tail.last_activity,
                    continuity_break=row[9],
                    first_prompt=row[10] if tail is None else tail.first_prompt,
                    transcript=row[11],
                    mode=row[12],
                    terminal=None if row[13] is None else bool(row[13]),
                )
            )
        return out

    def latest_session_for_claude_id(self, claude_session_id: str) -> SessionInfo | None:
        """The session that most recently went through `claude_session_id` (to resume it)."""
        columns = ", ".join(f"s.{c.strip()}" for c in _SESSION_COLUMNS.split(","))
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {columns} FROM claude_sessions c JOIN sessions s ON s.id = c.happy_session "
                "WHERE c.claude_session_id = ? ORDER BY c.seen_at DESC, c.rowid DESC LIMIT 1",
                (claude_session_id,),
            ).fetchone()
        return None if row is None else SessionInfo(*row)

    # --- ending ------------------------------------------------------------------------------

    def end_abandoned(
        self, session_id: str, closing: Sequence[Envelope], *, ended_at: int, mapper_state: str | None
    ) -> bool:
        """End a `running` session whose launcher is gone as `failed`, with the envelopes that
        close what it left open, in one transaction; False (nothing written) when another start
        of happy ended it first."""
        bodies = [(env.id, env.time, env.to_json()) for env in closing]
        with self._on(session_id) as data, self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET status = 'failed', ended_at = ? WHERE id = ? AND status = 'running'",
                (ended_at, session_id),
            )
            if cur.rowcount == 0:
                return False

            def close_in(data_conn: sqlite3.Connection) -> None:
                first = session_next_seq(data_conn, "envelopes", session_id)
                insert(data_conn, session_id, first, bodies, [], mapper_state)

            if data is self:  # an older happy's session: its data is in this transaction
                close_in(conn)
                return True
            # Committed within the registry's transaction: a crash between the two commits
            # leaves the session running, and the next sweep closes nothing twice (the closing
            # envelopes and the closed mapper state are there).
            with data._write() as own:
                close_in(own)
                tail = read_tail(own, session_id)
            _note_tail(conn, session_id, tail)
        return True


def _note_tail(conn: sqlite3.Connection, session_id: str, tail: Tail | None) -> None:
    if tail is not None:
        update_session(
            conn,
            session_id,
            "last_seq = ?, last_activity = ?, first_prompt = ?",
            (tail.last_seq, tail.last_activity, tail.first_prompt),
        )
