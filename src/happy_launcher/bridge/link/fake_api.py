"""An in-memory Happy server for the bridge's tests, with the real one's semantics (measured in
happy-server-facts.md): get-or-create by tag returns the stored session unchanged; a posted
localId already known returns its row and creates nothing; seqs are per session; fetches go
after a seq. `fail_next(n)` makes the next n calls fail as an outage would."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from happy_launcher.bridge.link.api import MAX_BATCH, MAX_FETCH, Fetched, Posted, RemoteSession
from happy_launcher.errors import HappyServerError


@dataclass
class FakeRow:
    id: str
    seq: int
    content: str
    local_id: str | None


@dataclass
class FakeSession:
    remote: RemoteSession
    rows: list[FakeRow] = field(default_factory=list)


class FakeHappyApi:
    def __init__(self, url: str = "http://fake-happy") -> None:
        self.url = url
        self.sessions: dict[str, FakeSession] = {}  # by tag
        self.machines: dict[str, tuple[str, str | None]] = {}  # id -> (metadata, data key)
        self.calls: list[str] = []  # every call's name, failed ones included
        self.posted_batches: list[list[str]] = []  # the localIds of each post that succeeded
        self.posted = anyio.Event()  # set at each successful post (tests wait on it), then renewed
        self._failures = 0
        self._failing: str | None = None
        self._ids = itertools.count(1)

    def fail_next(self, calls: int, only: str | None = None) -> None:
        """The next `calls` calls (of the method named `only`, if given) fail as in an outage."""
        self._failures, self._failing = calls, only

    def by_id(self, happy_id: str) -> FakeSession:
        return next(s for s in self.sessions.values() if s.remote.id == happy_id)

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        if self._failures > 0 and self._failing in (None, name):
            self._failures -= 1
            raise HappyServerError(f"cannot reach Happy's server at {self.url} to {name} (outage)")

    async def create_session(
        self, tag: str, metadata: str, agent_state: str | None, data_key: str | None
    ) -> RemoteSession:
        self._enter("create_session")
        if tag not in self.sessions:
            remote = RemoteSession(
                id=f"happy-{next(self._ids)}",
                seq=0,
                metadata=metadata,
                metadataVersion=0,
                agentState=agent_state,
                agentStateVersion=0,
                dataEncryptionKey=data_key,
            )
            self.sessions[tag] = FakeSession(remote)
        return self.sessions[tag].remote

    async def post_messages(self, happy_id: str, messages: Sequence[tuple[str, str]]) -> list[Posted]:
        self._enter("post_messages")
        if not 1 <= len(messages) <= MAX_BATCH:
            raise HappyServerError(f"a post of {len(messages)} messages (the server takes 1 to {MAX_BATCH})")
        session = self.by_id(happy_id)
        known = {row.local_id: row for row in session.rows}
        answer: list[Posted] = []
        for local_id, content in messages:
            row = known.get(local_id)
            if row is None:
                row = FakeRow(f"m{next(self._ids)}", len(session.rows) + 1, content, local_id)
                session.rows.append(row)
                known[local_id] = row
            answer.append(Posted(id=row.id, seq=row.seq, localId=local_id))
        self.posted_batches.append([local_id for local_id, _ in messages])
        self.posted.set()
        self.posted = anyio.Event()
        return answer

    async def fetch_messages(
        self, happy_id: str, after_seq: int, limit: int = MAX_FETCH
    ) -> tuple[list[Fetched], bool]:
        self._enter("fetch_messages")
        after = [row for row in self.by_id(happy_id).rows if row.seq > after_seq]
        page = [Fetched(id=r.id, seq=r.seq, content=r.content, localId=r.local_id) for r in after[:limit]]
        return page, len(after) > limit

    async def create_machine(self, machine_id: str, metadata: str, data_key: str | None) -> None:
        self._enter("create_machine")
        self.machines.setdefault(machine_id, (metadata, data_key))

    def add_message(self, happy_id: str, content: str, local_id: str | None = None) -> FakeRow:
        """A message from elsewhere (the app)."""
        session = self.by_id(happy_id)
        row = FakeRow(f"m{next(self._ids)}", len(session.rows) + 1, content, local_id)
        session.rows.append(row)
        return row
