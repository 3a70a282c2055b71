"""The durable session store: one SQLite file under HAPPY_HOME_DIR (design §5).

Every envelope is stored before it is delivered, so a crash or restart loses nothing and
resends nothing. WAL mode lets the CLI verbs (`sessions`, `watch`) read from their own
connection while a launcher writes. `synchronous=NORMAL` means a commit survives a crash of
the launcher (the case that matters) though not necessarily a power cut, and costs no fsync;
checkpoints (which do) run in a background thread (`checkpoint.py`), not inside commits.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from happy_launcher.errors import StoreConflictError, StoreError
from happy_launcher.home.dirs import HOME_ENV, ensure_home
from happy_launcher.home.procs import ProcessId
from happy_launcher.store.checkpoint import CHECKPOINT_IDLE, WAL_BURST
from happy_launcher.store.happy_links import HappyLinkStore
from happy_launcher.store.resume import Delivered, ResumeStore
from happy_launcher.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    create_private,
    session_next_seq,
    store_error,
    update_session,
)

if TYPE_CHECKING:
    from happy_launcher.protocol import Envelope

DB_NAME = "sessions.db"
_LOG = logging.getLogger("happy_launcher.store")


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    claude_session_id: str | None  # the current one; history is in `claude_sessions`
    cwd: str
    started_at: int
    ended_at: int | None
    status: str


@dataclass(frozen=True, slots=True)
class SessionSummary:
    info: SessionInfo
    owner: ProcessId | None  # its launcher (while it runs)
    last_activity: int | None  # the time of its last envelope
    continuity_break: str | None = None  # why the conversation broke at a switch, if it did
    first_prompt: str | None = None  # the text of its first user message (for its title)
    transcript: str | None = None  # the transcript of its current Claude session, when known
    mode: str | None = None  # its front end, as its launcher last said (None: not said)
    terminal: bool | None = None  # whether the run has a terminal, as its launcher said


_SESSION_COLUMNS = "id, claude_session_id, cwd, started_at, ended_at, status"
# The text of a session's first user message: the envelopes are read in seq order until it, so
# usually a few of them.
_BODY = "CAST(e.body AS TEXT)"  # JSON text: a BLOB would be read as SQLite's binary JSON
_FIRST_PROMPT = (
    f"(SELECT json_extract({_BODY}, '$.ev.text') FROM envelopes e WHERE e.session = s.id "
    f"AND json_extract({_BODY}, '$.role') = 'user' AND json_extract({_BODY}, '$.ev.t') = 'text' "
    "ORDER BY e.seq LIMIT 1)"
)
_TRANSCRIPT = (
    "(SELECT transcript_path FROM claude_sessions c WHERE c.happy_session = s.id "
    "AND c.claude_session_id = s.claude_session_id AND transcript_path IS NOT NULL "
    "ORDER BY c.seen_at DESC, c.rowid DESC LIMIT 1)"
)


class SessionStore(ResumeStore, HappyLinkStore):
    """The store's operations (those a later run resumes with: `ResumeStore`; the links to
    Happy's server: `HappyLinkStore`); see
    `StoreConnection` for the connection and transactions."""

    @classmethod
    def open(
        cls, home: Path, *, busy_timeout: float = 5.0, checkpoint_idle: float = CHECKPOINT_IDLE
    ) -> SessionStore:
        """Open (creating if needed) `<home>/sessions.db`; `home` is created 0700, the file 0600."""
        path = ensure_home(home) / DB_NAME
        create_private(path)
        try:
            # isolation_level=None: we issue BEGIN IMMEDIATE ourselves (see `_write`).
            conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise store_error(path, exc) from exc
        store = cls(conn, path, busy_timeout=busy_timeout, checkpoint_idle=checkpoint_idle)
        try:
            store._setup()
        except BaseException:
            store.close()
            raise
        return store

    def _setup(self) -> None:
        with self._read() as conn:
            (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode != "wal":  # e.g. some network file systems; still correct, just less concurrent
                _LOG.warning("session store %s runs in %s journal mode, not WAL", self.path, mode)
            self._wal = mode == "wal"
            conn.execute("PRAGMA synchronous = NORMAL")
            # In line only past WAL_BURST (see checkpoint.py): what keeps the WAL bounded while
            # commits never pause, as the background checkpoints wait for a pause.
            (page,) = conn.execute("PRAGMA page_size").fetchone()
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_BURST // page}")
            # A WAL grown by a burst (a 100 MB history sent) shrinks back once checkpointed.
            conn.execute(f"PRAGMA journal_size_limit = {WAL_BURST}")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
        # Only a migration takes the write lock, so opening never waits for a busy writer.
        if version != SCHEMA_VERSION:
            self._migrate()

    def _migrate(self) -> None:
        with self._write() as conn:
            (version,) = conn.execute("PRAGMA user_version").fetchone()  # again: under the lock
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer happy (schema {version}, this one knows "
                    f"{SCHEMA_VERSION}): upgrade happy or set {HOME_ENV} to another directory"
                )
            for migration in MIGRATIONS[version:]:
                for statement in migration:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

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
        with self._write() as conn:
            conn.execute(
                "INSERT INTO sessions (id, cwd, started_at, status, pid, pid_start) "
                "VALUES (?, ?, ?, ?, ?, ?)",
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
        with self._write() as conn:
            update_session(conn, session_id, "status = ?, ended_at = ?", (status, ended_at))

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
        with self._write() as conn:
            update_session(conn, session_id, "mapper_state = ?", (state_json,))

    def load_mapper_state(self, session_id: str) -> str | None:
        with self._read() as conn:
            row = conn.execute("SELECT mapper_state FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise StoreConflictError(f"no session {session_id} in {self.path}")
        state: str | None = row[0]
        return state

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently started first."""
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY started_at DESC, id")
            return [SessionInfo(*row) for row in rows]

    def session_summaries(self) -> list[SessionSummary]:
        """All sessions with their launcher, last activity, first prompt and current transcript,
        most recently started first."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS}, pid, pid_start, "
                "(SELECT time FROM envelopes e WHERE e.session = s.id ORDER BY e.seq DESC LIMIT 1), "
                f"continuity_break, {_FIRST_PROMPT}, {_TRANSCRIPT}, mode, terminal "
                "FROM sessions s ORDER BY started_at DESC, id"
            )
            return [
                SessionSummary(
                    SessionInfo(*row[:6]),
                    None if row[6] is None else ProcessId(row[6], row[7]),
                    last_activity=row[8],
                    continuity_break=row[9],
                    first_prompt=row[10],
                    transcript=row[11],
                    mode=row[12],
                    terminal=None if row[13] is None else bool(row[13]),
                )
                for row in rows
            ]

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

    # --- envelopes ----------------------------------------------------------------------------

    def append_envelopes(
        self,
        session_id: str,
        envelopes: Sequence[Envelope],
        processed_keys: Iterable[str] = (),
        *,
        mapper_state: str | None = None,
        delivered: Sequence[Delivered] = (),
    ) -> list[int]:
        """Store envelopes, mark transcript keys processed, inbound messages `delivered` (and
        save the mapper state) atomically.

        One transaction, so a crash never leaves a key marked without its envelopes or the
        reverse, nor a message delivered without its user text. Returns the per-session seqs
        given to the envelopes (strictly increasing from 1).
        """
        bodies = [(env.id, env.time, env.to_json()) for env in envelopes]  # serialise outside the lock
        keys = [(session_id, key) for key in processed_keys]
        if not bodies and not keys and mapper_state is None and not delivered:
            return []
        marks = [(d.at, session_id, d.seq) for d in delivered]
        try:
            return self._append(session_id, bodies, keys, mapper_state, marks)
        except StoreConflictError:
            if self._next_seq.pop(session_id, None) is None:
                raise
            # The seq remembered was taken (another writer of this session: not supposed to
            # happen): ask the database.
            return self._append(session_id, bodies, keys, mapper_state, marks)

    def _append(
        self,
        session_id: str,
        bodies: list[tuple[str, int, bytes]],
        keys: list[tuple[str, str]],
        mapper_state: str | None,
        marks: list[tuple[int, str, int]],
    ) -> list[int]:
        with self._write() as conn:
            # The next seq is remembered from batch to batch (a statement less per batch); the
            # first batch asks the database, which also checks that the session exists (sessions
            # are never deleted).
            first = self._next_seq.get(session_id) or session_next_seq(conn, "envelopes", session_id)
            seqs = _insert(conn, session_id, first, bodies, keys, mapper_state)
            # The first delivery stands: a message taken again (a record re-read) keeps its time.
            if marks:  # rare: no statement at all for the batches without
                conn.executemany(
                    "UPDATE inbound SET delivered_at = ? "
                    "WHERE session = ? AND seq = ? AND delivered_at IS NULL",
                    marks,
                )
        self._next_seq[session_id] = first + len(bodies)  # committed
        return seqs

    def end_abandoned(
        self, session_id: str, closing: Sequence[Envelope], *, ended_at: int, mapper_state: str | None
    ) -> bool:
        """End a `running` session whose launcher is gone as `failed`, with the envelopes that
        close what it left open, in one transaction; False (nothing written) when another start
        of happy ended it first."""
        bodies = [(env.id, env.time, env.to_json()) for env in closing]
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET status = 'failed', ended_at = ? WHERE id = ? AND status = 'running'",
                (ended_at, session_id),
            )
            if cur.rowcount == 0:
                return False
            first = session_next_seq(conn, "envelopes", session_id)
            _insert(conn, session_id, first, bodies, [], mapper_state)
        return True

    def processed_keys(self, session_id: str) -> set[str]:
        with self._read() as conn:
            rows = conn.execute("SELECT key FROM processed_keys WHERE session = ?", (session_id,))
            return {key for (key,) in rows}

    def raw_envelopes(
        self, session_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        """(seq, envelope JSON) in seq order, without re-validating (for `watch --json`-style output)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, body FROM envelopes WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session_id, after_seq, -1 if limit is None else limit),
            )
            return [(seq, bytes(body)) for seq, body in rows]

    def raw_envelopes_before(self, session_id: str, before_seq: int, limit: int) -> list[tuple[int, bytes]]:
        """The `limit` envelopes just before `before_seq`, in seq order (a window read backwards)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, body FROM envelopes WHERE session = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (session_id, before_seq, limit),
            ).fetchall()
        return [(seq, bytes(body)) for seq, body in reversed(rows)]

    def last_seq(self, session_id: str) -> int:
        """The seq of the session's last envelope (0: none yet)."""
        with self._read() as conn:
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM envelopes WHERE session = ?", (session_id,)
            ).fetchone()
        return int(last)

    def envelopes(
        self, session_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[tuple[int, Envelope]]:
        # Loaded here: a reader of raw envelopes (`happy watch`) starts without the protocol's models.
        from happy_launcher.protocol import parse_envelope

        return [(seq, parse_envelope(body)) for seq, body in self.raw_envelopes(session_id, after_seq, limit)]


def _insert(
    conn: sqlite3.Connection,
    session_id: str,
    first: int,
    bodies: list[tuple[str, int, bytes]],
    keys: list[tuple[str, str]],
    mapper_state: str | None,
) -> list[int]:
    """Inside a write transaction: envelopes from seq `first`, processed keys, mapper state."""
    seqs = list(range(first, first + len(bodies)))
    if bodies:  # a batch of keys alone (records that map to nothing) runs no statement for them
        conn.executemany(
            "INSERT INTO envelopes (session, seq, id, time, body) VALUES (?, ?, ?, ?, ?)",
            [(session_id, seq, *body) for seq, body in zip(seqs, bodies, strict=True)],
        )
    if keys:
        # OR IGNORE: marking a key twice is harmless (a record re-read after a restart).
        conn.executemany("INSERT OR IGNORE INTO processed_keys (session, key) VALUES (?, ?)", keys)
    if mapper_state is not None:
        update_session(conn, session_id, "mapper_state = ?", (mapper_state,))
    return seqs
