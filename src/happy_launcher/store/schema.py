"""The SQL side of the session store: schema migrations, file creation, error translation."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from happy_launcher.errors import StoreConflictError, StoreError, StoreFullError
from happy_launcher.home.dirs import HOME_ENV

# MIGRATIONS[v] takes a database from schema version v to v + 1 (PRAGMA user_version).
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY, claude_session_id TEXT, cwd TEXT NOT NULL,
            started_at INTEGER NOT NULL, ended_at INTEGER, status TEXT NOT NULL, mapper_state TEXT)""",
        """CREATE TABLE claude_sessions (
            happy_session TEXT NOT NULL, claude_session_id TEXT NOT NULL, transcript_path TEXT,
            source TEXT NOT NULL, seen_at INTEGER NOT NULL)""",
        "CREATE INDEX claude_sessions_by_id ON claude_sessions (claude_session_id, seen_at)",
        """CREATE TABLE envelopes (
            session TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL UNIQUE,
            time INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (session, seq))""",
        """CREATE TABLE processed_keys (
            session TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (session, key)) WITHOUT ROWID""",
        """CREATE TABLE inbound (
            session TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL UNIQUE, time INTEGER NOT NULL,
            body BLOB NOT NULL, delivered_at INTEGER, PRIMARY KEY (session, seq))""",
        "CREATE INDEX inbound_pending ON inbound (session, seq) WHERE delivered_at IS NULL",
    ),
    (
        # The launcher process of a running session (pid + its start time, see home/procs.py):
        # a session whose launcher is gone is ended by the next start, never left `running`.
        "ALTER TABLE sessions ADD COLUMN pid INTEGER",
        "ALTER TABLE sessions ADD COLUMN pid_start INTEGER",
    ),
    (
        # Where a session's mirroring of a transcript file began (its size when first tailed
        # with its history skipped): a later run of the session reads on from there, so what
        # was written while happy was down is mirrored, and the older history still is not.
        """CREATE TABLE history_marks (
            session TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
            PRIMARY KEY (session, path)) WITHOUT ROWID""",
    ),
    (
        # Why the conversation did not continue across a switch of front ends (None: it did).
        "ALTER TABLE sessions ADD COLUMN continuity_break TEXT",
    ),
    (
        # Each session's Happy session on a Happy server (store/happy_links.py): its id, its
        # key (dataKey sessions; empty for legacy ones, whose key is the account secret), and
        # how far its envelopes were acknowledged and the app's messages handed over.
        """CREATE TABLE happy_links (
            session TEXT NOT NULL, server TEXT NOT NULL, happy_id TEXT NOT NULL,
            variant TEXT NOT NULL, key BLOB NOT NULL, sent_seq INTEGER NOT NULL DEFAULT 0,
            received_seq INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (session, server)) WITHOUT ROWID""",
    ),
    (
        # A running session's front end as its launcher last said (local, remote, headless) and
        # whether the run has a terminal: `happy sessions` lists them without asking each launcher.
        "ALTER TABLE sessions ADD COLUMN mode TEXT",
        "ALTER TABLE sessions ADD COLUMN terminal INTEGER",
    ),
    (
        # Sessions made from now on keep their data in a database of their own (store/layout.py);
        # the registry notes what a listing shows of one when it ends.
        "ALTER TABLE sessions ADD COLUMN own_data INTEGER",
        "ALTER TABLE sessions ADD COLUMN last_seq INTEGER",
        "ALTER TABLE sessions ADD COLUMN last_activity INTEGER",
        "ALTER TABLE sessions ADD COLUMN first_prompt TEXT",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def require_session(conn: sqlite3.Connection, session_id: str) -> None:
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise StoreConflictError(f"no session {session_id} in the store (a bug in happy: please report it)")


def session_next_seq(conn: sqlite3.Connection, table: str, session_id: str) -> int:
    """`require_session` and `next_seq` in one statement (the per-envelope-batch path)."""
    known, last = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?), "
        f"(SELECT MAX(seq) FROM {table} WHERE session = ?)",
        (session_id, session_id),
    ).fetchone()
    if not known:
        raise StoreConflictError(f"no session {session_id} in the store (a bug in happy: please report it)")
    return 1 if last is None else int(last) + 1


def next_seq(conn: sqlite3.Connection, table: str, session_id: str) -> int:
    # MAX over the (session, seq) primary key is one index probe; rows are never deleted, so a
    # seq is never reused. `table` is always a literal from this module.
    (last,) = conn.execute(f"SELECT MAX(seq) FROM {table} WHERE session = ?", (session_id,)).fetchone()
    return 1 if last is None else int(last) + 1


def update_session(
    conn: sqlite3.Connection, session_id: str, assignments: str, values: tuple[object, ...]
) -> None:
    # `assignments` is always a literal from this module, never user input.
    cur = conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values, session_id))
    if cur.rowcount == 0:
        raise StoreConflictError(f"no session {session_id} in the store (a bug in happy: please report it)")


def create_private(path: Path) -> None:
    """Create the database file 0600 before SQLite does (SQLite would use 0644 minus umask), and
    tighten an existing one to 0600.

    SQLite gives the -wal and -shm files the mode of the database file, so they are 0600 too.
    An existing file is never opened here: closing any descriptor of it would drop every POSIX
    lock this process holds on it, those of a store already open in it included; another
    process would then take its own close for the last and delete the WAL under that store.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        if path.is_dir() or not os.access(path, os.R_OK | os.W_OK):
            reason = "a directory" if path.is_dir() else "Permission denied"
            raise _cannot_open(path, reason) from None
        with contextlib.suppress(OSError):  # not ours to change: the store works all the same
            path.chmod(0o600)  # a store made by an older happy, or by hand, may be 0644
        return
    except OSError as exc:
        raise _cannot_open(path, exc.strerror or str(exc)) from exc
    os.close(fd)  # a file just made: no lock of this process on it yet


def _cannot_open(path: Path, reason: str) -> StoreError:
    return StoreError(
        f"cannot open {path} ({reason}): check its permissions and those of its directory, "
        f"or set {HOME_ENV} to a writable directory"
    )


def store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    code = exc.sqlite_errorcode & 0xFF  # primary code; extended codes refine it
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreConflictError(f"{path}: {exc} (a bug in happy: please report it)")
    if code == sqlite3.SQLITE_FULL:
        return StoreFullError(
            f"the disk is full: cannot write {path}; free some space or set {HOME_ENV} to a directory "
            "on another disk"
        )
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreError(f"{path} is locked by another process: retry, or stop the process holding it")
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH):
        return StoreError(
            f"cannot write {path} ({exc}): check its permissions and those of its directory, "
            f"or set {HOME_ENV} to a writable directory"
        )
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return StoreError(f"{path} is not a valid happy session store ({exc}): move it aside and retry")
    return StoreError(f"the session store {path} failed ({exc}): check the disk, then retry")
