"""Each session's link to its Happy session on a Happy server (issue 18): the server's id for it,
the key its payloads are sealed with, and two marks: the last envelope seq the server has
acknowledged (`sent_seq`) and the last server message seq of the app's that was handed to the
session (`received_seq`). The store is the bridge's outbox: it resumes from these marks."""

from __future__ import annotations

from typing import Literal, NamedTuple

from happy_launcher.errors import StoreConflictError
from happy_launcher.store.envelopes import EnvelopeStore
from happy_launcher.store.schema import require_session

PENDING = ""  # the happy_id of a link whose key is kept but whose create the server has not answered


class HappyLink(NamedTuple):
    session: str
    server: str
    happy_id: str  # PENDING until the server has answered the create
    variant: Literal["legacy", "dataKey"]
    key: bytes  # dataKey: the session's AES key; legacy: empty (the key is the account secret)
    sent_seq: int = 0
    received_seq: int = 0

    def __repr__(self) -> str:  # never a key in a log or a traceback
        return f"HappyLink(session={self.session!r}, happy_id={self.happy_id!r}, sent_seq={self.sent_seq})"


_COLUMNS = "session, server, happy_id, variant, key, sent_seq, received_seq"


class HappyLinkStore(EnvelopeStore):  # a link's marks are seqs of the session's envelopes
    def happy_link(self, session_id: str, server: str) -> HappyLink | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM happy_links WHERE session = ? AND server = ?", (session_id, server)
            ).fetchone()
        if row is None:
            return None
        return HappyLink(row[0], row[1], row[2], row[3], bytes(row[4]), int(row[5]), int(row[6]))

    def session_of(self, happy_id: str, server: str) -> str | None:
        """Our session linked to Happy's session `happy_id` on `server`."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT session FROM happy_links WHERE happy_id = ? AND server = ?", (happy_id, server)
            ).fetchone()
        return None if row is None else str(row[0])

    def save_happy_link(self, link: HappyLink) -> None:
        """Insert or update the link; its marks never go backwards."""
        with self._write() as conn:
            require_session(conn, link.session)
            conn.execute(
                f"INSERT INTO happy_links ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session, server) DO UPDATE SET happy_id = excluded.happy_id, "
                "variant = excluded.variant, key = excluded.key, "
                "sent_seq = MAX(sent_seq, excluded.sent_seq), "
                "received_seq = MAX(received_seq, excluded.received_seq)",
                link,  # its fields in _COLUMNS order
            )

    def advance_sent(self, session_id: str, server: str, seq: int) -> None:
        """The server acknowledged the session's envelopes up to `seq` (never backwards)."""
        self._advance("sent_seq", session_id, server, seq)

    def advance_received(self, session_id: str, server: str, seq: int) -> None:
        """The app's messages up to server seq `seq` were handed to the session (never backwards)."""
        self._advance("received_seq", session_id, server, seq)

    def _advance(self, column: str, session_id: str, server: str, seq: int) -> None:
        # `column` is always a literal from this module.
        with self._write() as conn:
            cur = conn.execute(
                f"UPDATE happy_links SET {column} = MAX({column}, ?) WHERE session = ? AND server = ?",
                (seq, session_id, server),
            )
            if cur.rowcount == 0:
                raise StoreConflictError(
                    f"no Happy link for session {session_id} (a bug in happy: please report it)"
                )

    def unsent_sessions(self, server: str) -> list[str]:
        """The sessions with envelopes the server has not acknowledged (or no link to it yet),
        oldest first: an ended session's last seq is noted in the registry, a running one's is
        read from its own database, an older happy's is one probe of the registry's envelopes."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT s.id, s.own_data, s.status = 'running', s.last_seq, COALESCE(l.sent_seq, 0), "
                "s.own_data IS NULL AND EXISTS (SELECT 1 FROM envelopes e WHERE e.session = s.id "
                "AND e.seq > COALESCE(l.sent_seq, 0)) "
                "FROM sessions s LEFT JOIN happy_links l ON l.session = s.id AND l.server = ? "
                "ORDER BY s.started_at, s.id",
                (server,),
            ).fetchall()
        return [
            sid
            for sid, own, running, last, sent, unsent in rows
            if unsent or (own and self._last(sid, running, last) > sent)
        ]

    def _last(self, session_id: str, running: bool, noted: int | None) -> int:
        return noted if noted is not None and not running else self.last_seq(session_id)
