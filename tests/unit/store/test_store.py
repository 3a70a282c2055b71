"""The SQLite session store, on real files in tmp_path."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from happy_launcher.errors import StoreConflictError, StoreError, StoreFullError
from happy_launcher.home.dirs import ensure_home, happy_home
from happy_launcher.home.procs import ProcessId
from happy_launcher.protocol import (
    Envelope,
    EnvelopeFactory,
    Event,
    FileEv,
    ImageMeta,
    SequentialIds,
    ServiceEv,
    StartEv,
    StopEv,
    TextEv,
    ToolCallEndEv,
    ToolCallStartEv,
    TurnEndEv,
    TurnStartEv,
)
from happy_launcher.store.checkpoint import CHECKPOINT_COMMITS
from happy_launcher.store.schema import SCHEMA_VERSION
from happy_launcher.store.sessions import DB_NAME, SessionStore
from tests.support.store import fill_disk, free_disk

TURN = "turn00000000000000000001"
SUB = "sub000000000000000000001"


@pytest.fixture
def factory() -> EnvelopeFactory:
    return EnvelopeFactory(SequentialIds("env"))


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    s = SessionStore.open(tmp_path / "home")
    s.create_session("s1", cwd="/w", started_at=1)
    s.create_session("s2", cwd="/w", started_at=2)
    return s


def texts(factory: EnvelopeFactory, *words: str) -> list[Envelope]:
    return [factory.agent(TextEv(text=w), turn=TURN, time=i) for i, w in enumerate(words)]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_open_creates_private_home_db_and_schema(tmp_path: Path, factory: EnvelopeFactory) -> None:
    home = tmp_path / "a" / "happy"
    with SessionStore.open(home) as s:
        s.create_session("s1", cwd="/w", started_at=1)
        s.append_envelopes("s1", texts(factory, "x"))
        db, own = home / DB_NAME, s.data_file("s1")
        assert mode(home) == mode(own.parent) == 0o700
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), own, Path(f"{own}-wal")):
            assert mode(path) == 0o600, path
    conn = sqlite3.connect(db)
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {
        "sessions",
        "claude_sessions",
        "envelopes",
        "processed_keys",
        "inbound",
        "history_marks",
        "happy_links",
    }
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_existing_home_keeps_its_mode(tmp_path: Path) -> None:
    home = tmp_path / "shared"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    assert ensure_home(home) == home
    assert mode(home) == 0o755


def test_happy_home_from_env() -> None:
    assert happy_home({"HAPPY_HOME_DIR": "/x/y", "HOME": "/h"}) == Path("/x/y")
    assert happy_home({"HAPPY_HOME_DIR": "~/hh", "HOME": "/h"}) == Path("/h/hh")
    assert happy_home({"HOME": "/h"}) == Path("/h/.happy")
    assert happy_home({"HAPPY_HOME_DIR": "", "HOME": "/h"}) == Path("/h/.happy")
    with pytest.raises(StoreError, match="HAPPY_HOME_DIR"):
        happy_home({})
    with pytest.raises(StoreError, match="absolute path"):
        happy_home({"HAPPY_HOME_DIR": "~/x"})


def test_seq_is_per_session_and_strictly_increasing(store: SessionStore, factory: EnvelopeFactory) -> None:
    assert store.append_envelopes("s1", texts(factory, "a", "b", "c")) == [1, 2, 3]
    assert store.append_envelopes("s2", texts(factory, "x", "y")) == [1, 2]
    assert store.append_envelopes("s1", texts(factory, "d")) == [4]
    assert store.append_envelopes("s1", []) == []
    assert [seq for seq, _ in store.envelopes("s1")] == [1, 2, 3, 4]
    assert [e.ev for _, e in store.envelopes("s2")] == [TextEv(text="x"), TextEv(text="y")]
    assert [seq for seq, _ in store.envelopes("s1", after_seq=1, limit=2)] == [2, 3]


def test_envelopes_round_trip_exactly(store: SessionStore, factory: EnvelopeFactory) -> None:
    events: list[Event] = [
        TurnStartEv(),
        TextEv(text='héllo ✓ \u2028 "quoted"\n', thinking=True),
        ServiceEv(text="svc"),
        ToolCallStartEv(call="c1", name="Bash", title="ls", description="list", args={"a": [1, {"b": None}]}),
        ToolCallEndEv(call="c1"),
        FileEv(ref="r", name="f.png", size=3, image=ImageMeta(width=1, height=2, thumbhash="th")),
        StartEv(title="sub"),
        StopEv(),
        TurnEndEv(status="cancelled"),
    ]
    sent = [factory.user_text("prompt", 5, claude_uuid="u-1")]
    sent += [
        factory.agent(ev, turn=TURN, time=7, subagent=SUB if i % 2 else None, usage={"input_tokens": i})
        for i, ev in enumerate(events)
    ]
    store.append_envelopes("s1", sent)
    assert [env for _, env in store.envelopes("s1")] == sent
    assert [body for _, body in store.raw_envelopes("s1")] == [env.to_json() for env in sent]


def test_batch_is_atomic_on_duplicate_id(store: SessionStore, factory: EnvelopeFactory) -> None:
    first = texts(factory, "a", "b")
    store.append_envelopes("s1", first, ["k1", "k2"])
    # The new envelope inserts fine, then the duplicate fails: both must be rolled back, keys too.
    with pytest.raises(StoreConflictError, match="UNIQUE"):
        store.append_envelopes("s1", [*texts(factory, "c"), first[0]], ["k3"], mapper_state='{"x":1}')
    assert [env for _, env in store.envelopes("s1")] == first
    assert store.processed_keys("s1") == {"k1", "k2"}
    assert store.load_mapper_state("s1") is None
    assert store.append_envelopes("s1", texts(factory, "d"), ["k3"]) == [3]  # no gap in seq


def test_unknown_session_is_a_conflict(store: SessionStore, factory: EnvelopeFactory) -> None:
    with pytest.raises(StoreConflictError, match="no session nope"):
        store.append_envelopes("nope", texts(factory, "a"))
    with pytest.raises(StoreConflictError):
        store.end_session("nope", "completed", 3)
    with pytest.raises(StoreConflictError):
        store.create_session("s1", cwd="/w", started_at=9)


def test_reopen_keeps_everything(tmp_path: Path, factory: EnvelopeFactory) -> None:
    home = tmp_path / "home"
    sent = texts(factory, "a", "b")
    with SessionStore.open(home) as s:
        s.create_session("s1", cwd="/w", started_at=1)
        s.record_claude_session("s1", "c-1", source="startup", seen_at=2, transcript_path="/t/c-1.jsonl")
        s.append_envelopes("s1", sent, ["k1"], mapper_state='{"turn":null}')
        s.append_inbound("s1", "m1", 3, b'{"text":"hi"}')
    with SessionStore.open(home) as s:
        assert [env for _, env in s.envelopes("s1")] == sent
        assert s.processed_keys("s1") == {"k1"}
        assert s.load_mapper_state("s1") == '{"turn":null}'
        assert [m.id for m in s.pending_inbound("s1")] == ["m1"]
        assert s.list_sessions()[0].claude_session_id == "c-1"
        assert s.append_envelopes("s1", texts(factory, "c")) == [3]


def test_second_connection_reads_while_a_write_is_open(store: SessionStore, factory: EnvelopeFactory) -> None:
    committed = texts(factory, "a")
    store.append_envelopes("s1", committed)
    writer = sqlite3.connect(store.data_file("s1"), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO envelopes VALUES ('s1', 2, 'zz', 0, x'00')")
    # A short busy timeout: were the reader blocked (no WAL), this would fail instead of hang.
    with SessionStore.open(store.path.parent, busy_timeout=0.05) as reader:
        assert [env for _, env in reader.envelopes("s1")] == committed
        with pytest.raises(StoreError, match="locked by another process"):
            reader.append_envelopes("s1", texts(factory, "b"))
        writer.execute("ROLLBACK")
        store.append_envelopes("s1", texts(factory, "c"))
        assert [seq for seq, _ in reader.envelopes("s1")] == [1, 2]


def test_calls_from_many_threads_are_serialised(store: SessionStore) -> None:
    def work(n: int) -> None:
        f = EnvelopeFactory(SequentialIds(f"t{n}x"))
        for i in range(30):
            store.append_envelopes("s1", [f.agent(TextEv(text=str(i)), turn=TURN, time=i)], [f"{n}-{i}"])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [seq for seq, _ in store.envelopes("s1")] == list(range(1, 121))
    assert len(store.processed_keys("s1")) == 120


def test_mapper_state_round_trip(store: SessionStore, factory: EnvelopeFactory) -> None:
    assert store.load_mapper_state("s1") is None
    store.save_mapper_state("s1", '{"turn":"t"}')
    assert store.load_mapper_state("s1") == '{"turn":"t"}'
    store.append_envelopes("s1", [], ["k"], mapper_state='{"turn":null}')
    assert store.load_mapper_state("s1") == '{"turn":null}'
    assert store.processed_keys("s1") == {"k"}
    with pytest.raises(StoreConflictError):
        store.load_mapper_state("nope")


def test_sessions_and_claude_ids(store: SessionStore) -> None:
    store.record_claude_session("s1", "c-1", source="startup", seen_at=10, transcript_path=None)
    store.record_claude_session("s2", "c-1", source="resume", seen_at=20, transcript_path=None)
    store.record_claude_session("s1", "c-2", source="clear", seen_at=30, transcript_path="/t")
    store.end_session("s1", "completed", 40)
    latest = store.latest_session_for_claude_id("c-1")
    assert latest is not None and latest.id == "s2"
    assert store.latest_session_for_claude_id("c-9") is None
    s2, s1 = store.list_sessions()
    assert (s1.id, s1.claude_session_id, s1.status, s1.ended_at) == ("s1", "c-2", "completed", 40)
    assert (s2.id, s2.status, s2.ended_at) == ("s2", "running", None)


def test_inbound_is_idempotent_and_tracks_delivery(store: SessionStore) -> None:
    assert store.append_inbound("s1", "m1", 1, b"one") == (1, True)
    assert store.append_inbound("s1", "m2", 2, b"two") == (2, True)
    assert store.append_inbound("s1", "m1", 3, b"again") == (1, False)  # a client retrying its send
    assert store.append_inbound("s2", "m3", 1, b"x") == (1, True)
    assert store.append_inbound("s2", "m1", 1, b"x") == (2, True)  # an id is one session's
    store.mark_delivered("s1", 1, 99)
    assert [(m.seq, m.id, m.body) for m in store.pending_inbound("s1")] == [(2, "m2", b"two")]
    with pytest.raises(StoreConflictError):
        store.mark_delivered("s1", 7, 99)


def test_disk_full_is_reported_and_rolled_back(store: SessionStore, factory: EnvelopeFactory) -> None:
    store.append_envelopes("s1", texts(factory, "a"), ["k1"])
    fill_disk(store)
    with pytest.raises(StoreFullError, match="disk is full"):
        store.append_envelopes("s1", texts(factory, "x" * 20_000), ["k2"])
    assert store.processed_keys("s1") == {"k1"}
    free_disk(store)
    assert store.append_envelopes("s1", texts(factory, "y" * 20_000), ["k2"]) == [2]


# Another process: opens the store with SQLite alone, counts the sessions, closes.
COUNT_SESSIONS = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "print(c.execute('SELECT count(*) FROM sessions').fetchone()[0]); c.close()"
)


def test_a_second_store_in_a_process_leaves_the_first_ones_locks(tmp_path: Path) -> None:
    """Closing any descriptor of the database file drops all of this process's POSIX locks on
    it, SQLite's too (the bridge holds two stores): another process's close would then take
    itself for the last and delete the WAL the first store still writes to, its commits lost to
    every reader."""
    first = SessionStore.open(tmp_path)
    second = SessionStore.open(tmp_path)
    try:

        def sessions_seen_by_another_process() -> str:
            argv = [sys.executable, "-c", COUNT_SESSIONS, str(tmp_path / DB_NAME)]
            return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout

        first.create_session("s1", cwd="/", started_at=1)
        assert sessions_seen_by_another_process() == "1\n"
        first.create_session("s2", cwd="/", started_at=2)
        assert sessions_seen_by_another_process() == "2\n"
    finally:
        second.close()
        first.close()


def test_home_under_a_regular_file(tmp_path: Path) -> None:
    # Root ignores permission bits, so a path that cannot be a directory stands in for them.
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match=r"check its permissions.*HAPPY_HOME_DIR"):
        SessionStore.open(tmp_path / "file" / "happy")
    with pytest.raises(StoreError, match=r"not a directory.*HAPPY_HOME_DIR"):
        SessionStore.open(tmp_path / "file")


def test_unwritable_db_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*args: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(StoreError, match=r"Permission denied.*check its permissions.*HAPPY_HOME_DIR"):
        SessionStore.open(tmp_path)


def test_db_path_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).mkdir()
    with pytest.raises(StoreError, match="HAPPY_HOME_DIR"):
        SessionStore.open(tmp_path)


def test_not_a_database(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"not a valid happy session store.*move it aside"):
        SessionStore.open(tmp_path)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    SessionStore.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match=r"newer happy.*upgrade happy"):
        SessionStore.open(tmp_path)


def test_closed_store_raises(store: SessionStore) -> None:
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_sessions()


def wal_frames(store: SessionStore) -> tuple[int, int]:
    """(frames in the WAL of session s1's database, frames checkpointed), from another connection."""
    with sqlite3.connect(store.data_file("s1")) as conn:
        _busy, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return log, done


def big_batches(factory: EnvelopeFactory, count: int) -> list[list[Envelope]]:
    return [[factory.agent(TextEv(text="x" * 4000), turn=TURN, time=1)] for _ in range(count)]


def test_commits_never_checkpoint_in_line(tmp_path: Path, factory: EnvelopeFactory) -> None:
    """SQLite's auto-checkpoint (three fdatasyncs inside a commit) waits for a burst (16 MB):
    with the background checkpointer waiting for the store to be idle, the WAL passes SQLite's
    default of 1000 pages unchecked."""
    store = SessionStore.open(tmp_path / "home", checkpoint_idle=3600)
    store.create_session("s1", cwd="/w", started_at=1)
    for batch in big_batches(factory, 1500):
        store.append_envelopes("s1", batch)
    log, _ = wal_frames(store)
    assert log > 1500  # one page per envelope at least; never reset by an in-line checkpoint
    store.close()


def test_the_background_checkpointer_empties_the_wal_once_enough_was_committed(
    tmp_path: Path, factory: EnvelopeFactory
) -> None:
    """Not after every idle moment: a checkpoint costs a few records' worth of CPU, and a live
    session commits a few times a second."""
    store = SessionStore.open(tmp_path / "home", checkpoint_idle=0)
    store.create_session("s1", cwd="/w", started_at=1)
    with store._on("s1") as data:
        checkpointer = data.checkpointer
    assert checkpointer is not None
    for batch in big_batches(factory, CHECKPOINT_COMMITS - checkpointer.pokes):
        store.append_envelopes("s1", batch)
    assert checkpointer.pokes == CHECKPOINT_COMMITS
    assert checkpointer.wait_covered(CHECKPOINT_COMMITS, timeout=10)  # one after the last commit
    assert checkpointer.runs == 1  # and none before it: the commits before were too few
    log, done = wal_frames(store)
    assert log == done
    store.close()
    assert store.checkpointer is None


def test_seqs_stay_right_when_another_store_wrote_in_between(
    tmp_path: Path, store: SessionStore, factory: EnvelopeFactory
) -> None:
    """The next seq is remembered between batches; a batch another writer slipped in (e.g. the
    sweep of a session thought dead) must not make the next one fail."""
    assert store.append_envelopes("s1", texts(factory, "a")) == [1]
    with SessionStore.open(tmp_path / "home") as other:
        assert other.append_envelopes("s1", texts(factory, "b")) == [2]
    assert store.append_envelopes("s1", texts(factory, "c", "d")) == [3, 4]
    assert [e.to_dict()["ev"]["text"] for _, e in store.envelopes("s1")] == ["a", "b", "c", "d"]


def test_a_sessions_front_end_is_noted_and_forgotten_by_its_next_launcher(store: SessionStore) -> None:
    def noted() -> tuple[str | None, bool | None]:
        (summary,) = [s for s in store.session_summaries() if s.info.id == "s-front"]
        return summary.mode, summary.terminal

    store.create_session("s-front", cwd="/w", started_at=1, owner=ProcessId(1, 2))
    assert noted() == (None, None)
    store.note_front("s-front", "headless", terminal=False)
    assert noted() == ("headless", False)
    store.end_session("s-front", "completed", 3)
    store.reopen_session("s-front", owner=ProcessId(5, 6))  # a launcher that may not say: unknown
    assert noted() == (None, None)
