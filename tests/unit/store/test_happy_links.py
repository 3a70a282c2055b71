"""The store's links to Happy's server (store/happy_links.py): the migration that adds them, the
marks that never go backwards, and the query of sessions not fully sent."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from happy_launcher.errors import StoreConflictError
from happy_launcher.protocol import EnvelopeFactory, SequentialIds, TextEv
from happy_launcher.store.happy_links import PENDING, HappyLink
from happy_launcher.store.schema import MIGRATIONS
from happy_launcher.store.sessions import DB_NAME, SessionStore

SERVER = "http://127.0.0.1:1"


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    s = SessionStore.open(tmp_path)
    for n, sid in enumerate(("s1", "s2", "s3")):
        s.create_session(sid, cwd="/w", started_at=n)
    return s


def add(store: SessionStore, sid: str, count: int) -> None:
    factory = EnvelopeFactory(SequentialIds(f"{sid}e"))
    store.append_envelopes(sid, [factory.agent(TextEv(text=str(i)), turn="t0", time=i) for i in range(count)])


def link(sid: str = "s1", **kw: object) -> HappyLink:
    fields: dict[str, object] = {"happy_id": "h1", "variant": "dataKey", "key": b"k" * 32} | kw
    return HappyLink(session=sid, server=SERVER, **fields)  # type: ignore[arg-type]


def test_a_store_of_the_previous_schema_gains_the_links_table(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME)
    before = next(v for v, migration in enumerate(MIGRATIONS) if "happy_links" in migration[0])
    for migration in MIGRATIONS[:before]:
        for statement in migration:
            conn.execute(statement)
    conn.execute("INSERT INTO sessions (id, cwd, started_at, status) VALUES ('old', '/w', 1, 'completed')")
    conn.execute(f"PRAGMA user_version = {before}")
    conn.commit()
    conn.close()
    with SessionStore.open(tmp_path) as store:
        assert store.happy_link("old", SERVER) is None
        store.save_happy_link(link("old"))
        assert store.happy_link("old", SERVER) == link("old")


def test_a_link_is_per_session_and_server_and_keeps_its_key(store: SessionStore) -> None:
    store.save_happy_link(link(happy_id=PENDING))
    store.save_happy_link(link())
    store.save_happy_link(link("s2", happy_id="h2", variant="legacy", key=b""))
    assert store.happy_link("s1", SERVER) == link()
    assert store.happy_link("s2", SERVER) == link("s2", happy_id="h2", variant="legacy", key=b"")
    assert store.happy_link("s1", "http://other") is None
    assert "kkk" not in repr(store.happy_link("s1", SERVER))


def test_marks_never_go_backwards(store: SessionStore) -> None:
    store.save_happy_link(link())
    store.advance_sent("s1", SERVER, 5)
    store.advance_sent("s1", SERVER, 3)
    store.advance_received("s1", SERVER, 7)
    store.advance_received("s1", SERVER, 2)
    store.save_happy_link(link())  # saved again (a new key for a pending link): the marks stand
    assert store.happy_link("s1", SERVER) == link(sent_seq=5, received_seq=7)
    with pytest.raises(StoreConflictError):
        store.advance_sent("s2", SERVER, 1)
    with pytest.raises(StoreConflictError):
        store.save_happy_link(link("nope"))


def test_unsent_sessions_are_those_with_envelopes_past_their_mark(store: SessionStore) -> None:
    add(store, "s1", 3)
    add(store, "s2", 2)
    assert store.unsent_sessions(SERVER) == ["s1", "s2"]  # no link yet; s3 has no envelope
    store.save_happy_link(link())
    store.advance_sent("s1", SERVER, 2)
    assert store.unsent_sessions(SERVER) == ["s1", "s2"]
    store.advance_sent("s1", SERVER, 3)
    assert store.unsent_sessions(SERVER) == ["s2"]
    assert store.unsent_sessions("http://other") == ["s1", "s2"]
