"""Test helpers over a real SessionStore: a full disk, simulated on a session's database."""

from __future__ import annotations

import sqlite3

from happy_launcher.store.sessions import SessionStore


def _data_conn(store: SessionStore, session: str) -> sqlite3.Connection:
    with store._on(session) as data:  # the store keeps it open after
        conn = data._conn
    assert conn is not None
    return conn


def fill_disk(store: SessionStore, session: str = "s1") -> None:
    """SQLITE_FULL on the next page allocation of the session's database: cap it at its size."""
    conn = _data_conn(store, session)
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")


def free_disk(store: SessionStore, session: str = "s1") -> None:
    _data_conn(store, session).execute("PRAGMA max_page_count = 1073741823")
