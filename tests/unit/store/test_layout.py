"""A database per session beside the registry (store/layout.py): no session waits for another's
write lock, a session of an older happy is still read and written where it is, and a listing
of ended sessions opens none of their databases."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from happy_launcher.errors import StoreError
from happy_launcher.protocol import Envelope, EnvelopeFactory, SequentialIds, TextEv
from happy_launcher.store.happy_links import HappyLink
from happy_launcher.store.layout import DATA_DIR_NAME, OPEN_SESSIONS
from happy_launcher.store.schema import MIGRATIONS
from happy_launcher.store.sessions import DB_NAME, SessionStore

TURN = "turn00000000000000000001"


@pytest.fixture
def factory() -> EnvelopeFactory:
    return EnvelopeFactory(SequentialIds("env"))


def agent(factory: EnvelopeFactory, *words: str) -> list[Envelope]:
    return [factory.agent(TextEv(text=w), turn=TURN, time=10 + i) for i, w in enumerate(words)]


def with_one_envelope(home: Path, factory: EnvelopeFactory) -> SessionStore:
    """A store with session s1 made, one envelope in it."""
    store = SessionStore.open(home)
    store.create_session("s1", cwd="/w", started_at=1)
    store.append_envelopes("s1", agent(factory, "a"))
    return store


def older_session(home: Path, session_id: str) -> None:
    """A store as the happy before the layout left it (schema 6): the session's row and its data
    in the one database."""
    home.mkdir(parents=True)
    with sqlite3.connect(home / DB_NAME) as conn:
        for migration in MIGRATIONS[:6]:
            for statement in migration:
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 6")
        conn.execute(
            "INSERT INTO sessions (id, cwd, started_at, status) VALUES (?, '/old', 1, 'running')",
            (session_id,),
        )
        conn.execute("INSERT INTO processed_keys VALUES (?, 'k0')", (session_id,))


def test_a_session_writes_its_own_database_while_another_holds_its_lock(
    tmp_path: Path, factory: EnvelopeFactory
) -> None:
    home = tmp_path / "home"
    with SessionStore.open(home, busy_timeout=0.05) as store:
        store.create_session("s1", cwd="/w", started_at=1)
        store.create_session("s2", cwd="/w", started_at=2)
        assert store.data_file("s1") == home / DATA_DIR_NAME / "s1.db"
        other = sqlite3.connect(store.data_file("s2"), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # s2's launcher mid-commit
        try:
            assert store.append_envelopes("s1", agent(factory, "a", "b"), ["k1"], mapper_state="{}") == [1, 2]
            with pytest.raises(StoreError, match="locked by another process"):
                store.append_envelopes("s2", agent(factory, "c"))
        finally:
            other.execute("ROLLBACK")
        assert store.append_envelopes("s2", agent(factory, "c")) == [1]
    with sqlite3.connect(home / DB_NAME) as registry:  # the registry holds rows, not data
        assert registry.execute("SELECT count(*) FROM envelopes").fetchone() == (0,)
        assert registry.execute("SELECT mapper_state FROM sessions WHERE id = 's1'").fetchone() == (None,)
    with SessionStore.open(home) as again:
        assert [seq for seq, _ in again.raw_envelopes("s1")] == [1, 2]
        assert again.processed_keys("s1") == {"k1"} and again.load_mapper_state("s1") == "{}"


def test_a_session_of_an_older_happy_keeps_its_data_in_the_registry(
    tmp_path: Path, factory: EnvelopeFactory
) -> None:
    home = tmp_path / "home"
    older_session(home, "old")
    with SessionStore.open(home) as store:
        assert store.data_file("old") == home / DB_NAME
        store.append_envelopes("old", [factory.user_text("hello", 5)], ["k"])
        store.append_inbound("old", "m1", 6, b"{}")
        assert store.unsent_sessions("server") == ["old"]
        store.end_session("old", "completed", 9)
        [summary] = store.session_summaries()
        assert (summary.first_prompt, summary.last_activity) == ("hello", 5)
        assert store.processed_keys("old") == {"k0", "k"} and len(store.pending_inbound("old")) == 1
    assert not (home / DATA_DIR_NAME / "old.db").exists()


def test_an_ended_session_is_listed_from_the_registry_alone(tmp_path: Path, factory: EnvelopeFactory) -> None:
    home = tmp_path / "home"
    with SessionStore.open(home) as store:
        for sid in ("ended", "live"):
            store.create_session(sid, cwd="/w", started_at=1)
            store.append_envelopes(sid, [factory.user_text(f"hi {sid}", 3), *agent(factory, "x")])
        store.end_session("ended", "completed", 20)
        ended = store.data_file("ended")
    for path in ended.parent.glob("ended.db*"):  # what the listing shows of it is in the registry
        path.unlink()
    with SessionStore.open(home) as store:
        summaries = {s.info.id: s for s in store.session_summaries()}
        assert store._own == {}  # the running one was looked at, and nothing kept open
        assert (summaries["ended"].first_prompt, summaries["ended"].last_activity) == ("hi ended", 10)
        assert (summaries["live"].first_prompt, summaries["live"].last_activity) == ("hi live", 10)
        assert store.unsent_sessions("server") == ["ended", "live"]


def test_a_running_sessions_unreadable_database_is_listed_without_its_activity(
    tmp_path: Path, factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    with SessionStore.open(home) as store:
        store.create_session("live", cwd="/w", started_at=1)
        lost = store.data_file("live")
    lost.unlink()
    with SessionStore.open(home) as store:
        [summary] = store.session_summaries()
    assert (summary.info.id, summary.first_prompt, summary.last_activity) == ("live", None, None)
    assert "live.db cannot be read" in caplog.text
    assert not lost.exists()  # a look never makes the file


def test_a_sessions_unsent_envelopes_are_told_from_its_noted_or_live_last_seq(
    tmp_path: Path, factory: EnvelopeFactory
) -> None:
    home = tmp_path / "home"
    with SessionStore.open(home) as store:
        for sid in ("ended", "live"):
            store.create_session(sid, cwd="/w", started_at=1)
            store.append_envelopes(sid, agent(factory, "a", "b"))
            store.save_happy_link(HappyLink(sid, "server", f"h-{sid}", "dataKey", b"k" * 32, sent_seq=2))
        store.end_session("ended", "completed", 20)
        assert store.unsent_sessions("server") == []
        store.append_envelopes("live", agent(factory, "c"))
        assert store.unsent_sessions("server") == ["live"]


def test_an_abandoned_session_is_closed_in_its_own_database_and_noted(
    tmp_path: Path, factory: EnvelopeFactory
) -> None:
    with with_one_envelope(tmp_path / "home", factory) as store:
        assert store.end_abandoned("s1", agent(factory, "closing"), ended_at=30, mapper_state='{"t":1}')
        assert not store.end_abandoned("s1", agent(factory, "again"), ended_at=31, mapper_state=None)
        assert [seq for seq, _ in store.raw_envelopes("s1")] == [1, 2]
        assert store.load_mapper_state("s1") == '{"t":1}'
        [summary] = store.session_summaries()
        assert (summary.info.status, summary.last_activity) == ("failed", 10)


def test_a_session_id_that_is_not_one_of_ours_is_refused_before_any_path_is_made(tmp_path: Path) -> None:
    with SessionStore.open(tmp_path / "home") as store, pytest.raises(StoreError, match="not a session id"):
        store.create_session("../escape", cwd="/w", started_at=1)
    assert not (tmp_path / "home" / DATA_DIR_NAME).exists()


def test_a_reader_of_many_sessions_keeps_a_bounded_number_of_them_open(
    tmp_path: Path, factory: EnvelopeFactory
) -> None:
    home, count = tmp_path / "home", OPEN_SESSIONS + 20
    with SessionStore.open(home) as writer:
        for n in range(count):
            writer.create_session(f"s{n}", cwd="/w", started_at=n)
            writer.append_envelopes(f"s{n}", agent(factory, str(n)))
        assert len(writer._own) == OPEN_SESSIONS
    fds = len(os.listdir("/proc/self/fd"))
    with SessionStore.open(home) as reader:
        for _ in range(2):  # the second pass reopens what the first closed
            for n in range(count):
                assert [seq for seq, _ in reader.raw_envelopes(f"s{n}")] == [1]
        assert list(reader._own) == [f"s{n}" for n in range(count - OPEN_SESSIONS, count)]
        assert len(os.listdir("/proc/self/fd")) - fds <= 3 * (OPEN_SESSIONS + 1)


def test_a_database_closed_for_room_closes_only_once_its_caller_is_done(
    tmp_path: Path, factory: EnvelopeFactory
) -> None:
    with SessionStore.open(tmp_path / "home") as store:
        for n in range(OPEN_SESSIONS + 1):
            store.create_session(f"s{n}", cwd="/w", started_at=n)
        with store._on("s1") as held:
            for n in range(2, OPEN_SESSIONS + 1):  # s0 and s1 pushed out: s1 is in use
                store.last_seq(f"s{n}")
            store.last_seq("s0")
            assert "s1" not in store._own
            assert held.append_envelopes("s1", agent(factory, "still open")) == [1]
        assert held._conn is None
        assert [seq for seq, _ in store.raw_envelopes("s1")] == [1]  # opened again


def test_a_lost_session_database_is_said_and_not_made_again_empty(
    tmp_path: Path, factory: EnvelopeFactory
) -> None:
    home = tmp_path / "home"
    with with_one_envelope(home, factory) as store:
        lost = store.data_file("s1")
    lost.unlink()
    with (
        SessionStore.open(home) as store,
        pytest.raises(StoreError, match=r"s1\.db is missing: the history of session s1"),
    ):
        store.raw_envelopes("s1")
    assert not lost.exists()
