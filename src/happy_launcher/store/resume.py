"""What a later run of a session picks up where this one left off, in the session store: the
inbound messages Claude has not taken yet (issue 9: exactly once), and where the mirroring of
each transcript file began (its history marks), in the session's own database
(store/layout.py). The rest of the store is `sessions.py`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from happy_launcher.errors import StoreConflictError
from happy_launcher.store.conn import StoreConnection
from happy_launcher.store.schema import next_seq, require_session


class Delivered(NamedTuple):
    """Inbound message `seq` was taken by Claude at `at` (ms)."""

    seq: int
    at: int


class InboundMessage(NamedTuple):
    seq: int
    id: str
    time: int
    body: bytes


class ResumeStore(StoreConnection):
    """Inbound messages and history marks (a message is marked delivered with the envelopes
    that show it taken: `SessionStore.append_envelopes`)."""

    def append_inbound(self, session_id: str, message_id: str, time: int, body: bytes) -> tuple[int, bool]:
        """Store a message from another client: (its seq, created now). Idempotent on
        `message_id` (a repeat gives the first one's seq and False), so a client that retries a
        send does not make Claude see the message twice."""
        with self._session_write(session_id) as conn:
            require_session(conn, session_id)
            row = conn.execute("SELECT session, seq FROM inbound WHERE id = ?", (message_id,)).fetchone()
            if row is not None and row[0] != session_id:
                raise StoreConflictError(f"inbound message {message_id} already belongs to session {row[0]}")
            if row is not None:
                return int(row[1]), False
            seq = next_seq(conn, "inbound", session_id)
            conn.execute(
                "INSERT INTO inbound VALUES (?, ?, ?, ?, ?, NULL)", (session_id, seq, message_id, time, body)
            )
            return seq, True

    def pending_inbound(self, session_id: str) -> list[InboundMessage]:
        """Inbound messages not yet delivered to Claude, oldest first."""
        with self._session_read(session_id) as conn:
            rows = conn.execute(
                "SELECT seq, id, time, body FROM inbound WHERE session = ? AND delivered_at IS NULL "
                "ORDER BY seq",
                (session_id,),
            )
            return [InboundMessage(seq, mid, time, bytes(body)) for seq, mid, time, body in rows]

    def last_delivered_inbound(self, session_id: str) -> InboundMessage | None:
        """The inbound message Claude took last (they are sent in order, one turn each)."""
        with self._session_read(session_id) as conn:
            row = conn.execute(
                "SELECT seq, id, time, body FROM inbound WHERE session = ? AND delivered_at IS NOT NULL "
                "ORDER BY seq DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        return None if row is None else InboundMessage(int(row[0]), row[1], int(row[2]), bytes(row[3]))

    def redeliver_inbound(self, session_id: str, seq: int, body: bytes) -> None:
        """Message `seq` is to be delivered again, as `body` (Claude took it but never answered)."""
        self._update_inbound(session_id, seq, "delivered_at = NULL, body = ?", (body,))

    def history_marks(self, session_id: str, paths: Iterable[str]) -> dict[str, int]:
        """Where the session's mirroring of these transcript files began (see `add_history_marks`)."""
        wanted = list(paths)
        marks = ",".join("?" * len(wanted))
        with self._session_read(session_id) as conn:
            rows = conn.execute(
                f"SELECT path, size FROM history_marks WHERE session = ? AND path IN ({marks})",
                (session_id, *wanted),
            )
            return {path: int(size) for path, size in rows}

    def add_history_marks(self, session_id: str, sizes: Mapping[str, int]) -> None:
        """Remember the sizes transcript files had when the session first tailed them with their
        history skipped; the first mark of a file stands."""
        with self._session_write(session_id) as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO history_marks VALUES (?, ?, ?)",
                [(session_id, path, size) for path, size in sizes.items()],
            )

    def mark_delivered(self, session_id: str, seq: int, delivered_at: int) -> None:
        self._update_inbound(session_id, seq, "delivered_at = ?", (delivered_at,))

    def _update_inbound(
        self, session_id: str, seq: int, assignments: str, values: tuple[object, ...]
    ) -> None:
        with self._session_write(session_id) as conn:
            cur = conn.execute(
                f"UPDATE inbound SET {assignments} WHERE session = ? AND seq = ?", (*values, session_id, seq)
            )
            if cur.rowcount == 0:
                raise StoreConflictError(f"no inbound message {seq} in session {session_id}")
