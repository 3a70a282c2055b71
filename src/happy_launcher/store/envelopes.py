"""A session's envelopes and the transcript keys processed, in the database that holds its
data (store/layout.py): appended with the mapper state and inbound deliveries in one
transaction, read back in seq order."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from happy_launcher.errors import StoreConflictError
from happy_launcher.store.conn import StoreConnection
from happy_launcher.store.layout import last_seq
from happy_launcher.store.resume import Delivered
from happy_launcher.store.schema import session_next_seq, update_session

if TYPE_CHECKING:
    from happy_launcher.protocol import Envelope


class EnvelopeStore(StoreConnection):
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
        with self._on(session_id) as data:
            try:
                return data._append(session_id, bodies, keys, mapper_state, marks)
            except StoreConflictError:
                if data._next_seq.pop(session_id, None) is None:
                    raise
                # The seq remembered was taken (another writer of this session: not supposed
                # to happen): ask the database.
                return data._append(session_id, bodies, keys, mapper_state, marks)

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
            seqs = insert(conn, session_id, first, bodies, keys, mapper_state)
            # The first delivery stands: a message taken again (a record re-read) keeps its time.
            if marks:  # rare: no statement at all for the batches without
                conn.executemany(
                    "UPDATE inbound SET delivered_at = ? "
                    "WHERE session = ? AND seq = ? AND delivered_at IS NULL",
                    marks,
                )
        self._next_seq[session_id] = first + len(bodies)  # committed
        return seqs

    def processed_keys(self, session_id: str) -> set[str]:
        with self._session_read(session_id) as conn:
            rows = conn.execute("SELECT key FROM processed_keys WHERE session = ?", (session_id,))
            return {key for (key,) in rows}

    def raw_envelopes(
        self, session_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        """(seq, envelope JSON) in seq order, without re-validating (for `watch --json`-style output)."""
        with self._session_read(session_id) as conn:
            rows = conn.execute(
                "SELECT seq, body FROM envelopes WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session_id, after_seq, -1 if limit is None else limit),
            )
            return [(seq, bytes(body)) for seq, body in rows]

    def raw_envelopes_before(self, session_id: str, before_seq: int, limit: int) -> list[tuple[int, bytes]]:
        """The `limit` envelopes just before `before_seq`, in seq order (a window read backwards)."""
        with self._session_read(session_id) as conn:
            rows = conn.execute(
                "SELECT seq, body FROM envelopes WHERE session = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (session_id, before_seq, limit),
            ).fetchall()
        return [(seq, bytes(body)) for seq, body in reversed(rows)]

    def last_seq(self, session_id: str) -> int:
        """The seq of the session's last envelope (0: none yet)."""
        with self._session_read(session_id) as conn:
            return last_seq(conn, session_id)

    def envelopes(
        self, session_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[tuple[int, Envelope]]:
        # Loaded here: a reader of raw envelopes (`happy watch`) starts without the protocol's models.
        from happy_launcher.protocol import parse_envelope

        return [(seq, parse_envelope(body)) for seq, body in self.raw_envelopes(session_id, after_seq, limit)]


def insert(
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
