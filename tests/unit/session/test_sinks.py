"""Envelope sinks and the commit point that keeps the session alive when one of them fails."""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from happy_launcher.errors import StoreConflictError, UsageError
from happy_launcher.protocol import (
    Envelope,
    EnvelopeFactory,
    SequentialIds,
    TextEv,
    TurnStartEv,
    parse_envelope,
)
from happy_launcher.session.commit import HOLD_KEYS, CommitPoint
from happy_launcher.session.core import Session
from happy_launcher.session.events_output import open_events_output
from happy_launcher.session.sinks import BackgroundSink, JsonLinesSink, MemorySink
from happy_launcher.store.resume import Delivered
from happy_launcher.store.sessions import SessionStore
from tests.support.store import fill_disk, free_disk

TURN = "turn00000000000000000001"
LOGGER = "happy_launcher.sinks"


@pytest.fixture
def factory() -> EnvelopeFactory:
    return EnvelopeFactory(SequentialIds("env"))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore.open(tmp_path / "home") as s:
        s.create_session("s1", cwd="/w", started_at=1)
        yield s


def batch(factory: EnvelopeFactory, *words: str) -> list[Envelope]:
    return [factory.agent(TurnStartEv(), turn=TURN, time=0)] + [
        factory.agent(TextEv(text=w), turn=TURN, time=i) for i, w in enumerate(words)
    ]


def records(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def stored(store: SessionStore) -> list[Envelope]:
    return [env for _, env in store.envelopes("s1")]


def test_commit_point_commits_envelopes_keys_and_mapper_state(
    store: SessionStore, factory: EnvelopeFactory
) -> None:
    states = iter(["state-1", "state-2"])
    commit = CommitPoint(store, "s1", state=lambda: next(states))
    sent = batch(factory, "a")
    commit.write(sent, ["k1"])
    commit.write([], ["k2"])  # records that map to nothing are still marked processed
    commit.close()
    assert stored(store) == sent
    assert store.processed_keys("s1") == {"k1", "k2"}
    assert store.load_mapper_state("s1") == "state-2"  # in the same transaction as k2
    store.list_sessions()  # closing the commit point left the store open


def test_commit_point_writes_the_mapper_state_only_when_it_changed(factory: EnvelopeFactory) -> None:
    flaky = FlakyStore()
    states = iter(["s1", "s1", "s2", "s2"])
    commit = CommitPoint(flaky, "s1", state=lambda: next(states))
    commit.write(batch(factory, "a"), ["k1"])
    commit.write(batch(factory, "b"), ["k2"])  # the same state: not written again
    flaky.fail_with = OSError("disk full")
    commit.write(batch(factory, "c"), ["k3"])  # s2 fails: kept in the backlog
    flaky.fail_with = None
    commit.write(batch(factory, "d"), ["k4"])  # s2 again: the backlog's s2 is written, then nothing
    assert flaky.states == ["s1", None, "s2", None]
    assert flaky.keys == ["k1", "k2", "k3", "k4"]


def test_the_keys_of_records_that_made_nothing_go_with_the_next_commit(factory: EnvelopeFactory) -> None:
    flaky = FlakyStore()
    states = iter(f"s{i}" for i in range(1, 9))
    commit = CommitPoint(flaky, "s1", state=lambda: next(states))
    commit.write([], ["k1"])
    commit.write([], ["k2"])
    assert flaky.keys == [] and flaky.states == []  # no transaction for them
    sent = batch(factory, "a")
    commit.write(sent, ["k3"])
    assert (flaky.envelopes, flaky.keys, flaky.states) == (sent, ["k1", "k2", "k3"], ["s1"])
    commit.write([], [f"h{i}" for i in range(HOLD_KEYS - 1)])
    assert flaky.states == ["s1"]  # held: one short of the bound
    commit.write([], ["last"])  # the bound: committed with the state they left
    assert flaky.keys[3:] == [*(f"h{i}" for i in range(HOLD_KEYS - 1)), "last"]
    commit.write([], ["k4"])
    commit.close()  # what is still held is committed at the close
    assert (flaky.keys[-1], flaky.states) == ("k4", ["s1", "s2", "s3"])


def test_held_keys_wait_out_a_store_outage_in_order(factory: EnvelopeFactory) -> None:
    flaky = FlakyStore()
    commit = CommitPoint(flaky, "s1")
    flaky.fail_with = OSError(28, "No space left on device")
    first = batch(factory, "a")
    commit.write(first, ["k1"])
    commit.write([], ["k2"])
    flaky.fail_with = None
    commit.close()
    assert (flaky.envelopes, flaky.keys) == (first, ["k1", "k2"])


def test_json_lines_file_appends_one_envelope_per_line(tmp_path: Path, factory: EnvelopeFactory) -> None:
    path = tmp_path / "events.jsonl"
    first, second = batch(factory, "a"), batch(factory, "b\nc")
    sink = JsonLinesSink(open_events_output(str(path)))
    sink.write(first)
    sink.write([], ["k"])
    sink.close()
    sink = JsonLinesSink(open_events_output(str(path)))  # a relaunch appends, never truncates
    sink.write(second)
    sink.close()
    lines = path.read_bytes().splitlines()
    assert [parse_envelope(line) for line in lines] == first + second
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_json_lines_to_an_inherited_fd(factory: EnvelopeFactory) -> None:
    read_end, write_end = os.pipe()
    try:
        sent = batch(factory, "a")
        sink = JsonLinesSink(open_events_output(f"fd:{write_end}"))
        sink.write(sent)
        sink.close()  # does not close the fd it was given
        os.write(write_end, b"")
        data = os.read(read_end, 65536)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert data == b"".join(env.to_json() + b"\n" for env in sent)


def test_json_lines_waits_on_a_pipe_left_non_blocking(factory: EnvelopeFactory) -> None:
    """Another process sharing the pipe set O_NONBLOCK: a full pipe is waited on, nothing is lost."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    sent = batch(factory, *["x" * 1000] * 300)  # ~300 KB: several times what the pipe holds
    want = b"".join(env.to_json() + b"\n" for env in sent)
    got = bytearray()

    def drain() -> None:
        while len(got) < len(want) and (chunk := os.read(read_end, 4096)):
            got.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        JsonLinesSink(open_events_output(f"fd:{write_end}")).write(sent)
    finally:
        os.close(write_end)  # ends the reader if the write failed half-way
        reader.join(timeout=10)
        os.close(read_end)
    assert bytes(got) == want


def test_json_lines_closed_pipe_disables_with_one_log_line(
    factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        sink = JsonLinesSink(open_events_output(f"fd:{write_end}"))
        sink.write(batch(factory, "a"))
        sink.write(batch(factory, "b"))
    finally:
        os.close(write_end)
    assert records(caplog) == [
        f"events fd:{write_end}: the reader closed the pipe; no more envelopes are written there"
    ]


def test_events_output_unopenable_path_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match=r"cannot open events file .*fd:3 3>events\.jsonl"):
        open_events_output(str(tmp_path / "file" / "events.jsonl"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("-", "would mix envelopes into Claude's own output"),
        ("fd:1", "fd 0-2 belong to Claude"),
        ("fd:x", "must be a number"),
        ("fd:987", "fd 987 is not open"),
    ],
)
def test_events_output_refuses_what_cannot_work(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        open_events_output(spec)


def test_events_output_refuses_a_read_only_fd(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("")
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(UsageError, match="open for reading only"):
            open_events_output(f"fd:{fd}")
    finally:
        os.close(fd)


class Seqs:
    """A subscriber that keeps what it is told."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        self.seen += [(seq, env.id) for seq, env in zip(seqs, envelopes, strict=True)]


def test_commit_point_disables_a_failing_best_effort_sink(
    store: SessionStore, factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    good, bad = MemorySink("good"), MemorySink("bad")
    commit = CommitPoint(store, "s1", [bad, good])
    bad.fail_with = OSError(28, "No space left on device")
    first, second = batch(factory, "a"), batch(factory, "b")
    commit.write(first)
    bad.fail_with = None  # a disabled sink is not retried, even once it would work
    commit.write(second)
    assert good.envelopes == first + second
    assert bad.envelopes == []
    assert stored(store) == first + second
    assert records(caplog) == [
        "bad failed and is disabled for the rest of the session: [Errno 28] No space left on device"
    ]
    assert commit.stats.disabled == ("bad",)
    assert commit.stats.failures == ("bad: No space left on device",)


def test_commit_point_passes_on_only_what_the_store_committed_in_seq_order(
    store: SessionStore, factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    events, subscriber = MemorySink("events"), Seqs()
    commit = CommitPoint(store, "s1", [events])
    unsubscribe = commit.subscribe(subscriber)
    before, during, after = batch(factory, "a"), batch(factory, "x" * 20_000), batch(factory, "y")
    commit.write(before, ["k1"])
    fill_disk(store)
    commit.write(during, ["k2"])
    commit.write(after, ["k3"])
    # The store is down: nothing downstream may get ahead of it.
    assert events.envelopes == before
    assert [env_id for _, env_id in subscriber.seen] == [e.id for e in before]
    assert stored(store) == before
    assert commit.stats.backlog == len(during) + len(after) + 2
    failures = records(caplog)
    assert len(failures) == 1 and "store failed: the disk is full" in failures[0]

    free_disk(store)
    commit.write([])  # an empty write retries the backlog
    assert stored(store) == before + during + after
    assert events.envelopes == before + during + after
    assert subscriber.seen == [(seq, env.id) for seq, env in store.envelopes("s1")]
    unsubscribe()
    last = batch(factory, "z")
    commit.write(last, ["k4"])
    assert stored(store) == before + during + after + last
    assert len(subscriber.seen) == len(before + during + after)  # unsubscribed
    assert store.processed_keys("s1") == {"k1", "k2", "k3", "k4"}
    assert commit.stats.backlog == 0 and commit.stats.dropped == 0
    assert records(caplog)[1:] == ["store recovered: 4 delayed envelopes written, 0 dropped so far"]


class FlakyStore:
    """A store fake: keeps batches, or raises `fail_with`."""

    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []
        self.keys: list[str] = []
        self.states: list[str | None] = []
        self.fail_with: Exception | None = None

    def append_envelopes(
        self,
        session_id: str,
        envelopes: Sequence[Envelope],
        processed_keys: Sequence[str] = (),
        *,
        mapper_state: str | None = None,
        delivered: Sequence[Delivered] = (),
    ) -> list[int]:
        if self.fail_with is not None:
            raise self.fail_with
        first = len(self.envelopes) + 1
        self.envelopes.extend(envelopes)
        self.keys.extend(processed_keys)
        self.states.append(mapper_state)
        return list(range(first, first + len(envelopes)))


def test_commit_point_backlog_is_bounded_and_counts_drops(
    factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    durable = FlakyStore()
    commit = CommitPoint(durable, "s1", backlog_limit=5)
    durable.fail_with = OSError(28, "No space left on device")
    first, second, third = batch(factory, "a"), batch(factory, "b"), batch(factory, "c")
    commit.write(first, ["k1"])  # 3 items
    commit.write(second, ["k2"])  # would make 6 > 5: dropped
    commit.write(second, ["k2"])
    assert commit.stats.dropped == 4
    durable.fail_with = None
    commit.write(third)
    assert durable.envelopes == first + third  # the backlog kept the oldest: a gap-free prefix
    assert durable.keys == ["k1"]
    assert records(caplog) == [
        "store failed: [Errno 28] No space left on device; keeping envelopes in memory and retrying",
        "store: backlog full, dropping new envelopes until it recovers",
        "store recovered: 2 delayed envelopes written, 4 dropped so far",
    ]


def test_commit_point_drops_a_batch_the_store_rejects_for_good(
    store: SessionStore, factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    events = MemorySink("events")
    commit = CommitPoint(store, "s1", [events])
    first = batch(factory, "a")
    commit.write(first)
    commit.write(first)  # same ids again: a conflict, retrying cannot help
    later = batch(factory, "b")
    commit.write(later)
    assert stored(store) == first + later
    assert events.envelopes == first + later  # the rejected batch went nowhere
    assert commit.stats.dropped == len(first)
    assert any("store rejected 2 envelopes, dropped" in m for m in records(caplog))


def test_commit_point_close_retries_then_reports_losses_and_never_raises(
    factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    durable, other = FlakyStore(), MemorySink("events")
    commit = CommitPoint(durable, "s1", [other])
    durable.fail_with = StoreConflictError("x")
    commit.write(batch(factory, "a"))
    durable.fail_with = OSError(5, "Input/output error")
    commit.write(batch(factory, "b"))

    def broken_close() -> None:
        raise OSError(9, "Bad file descriptor")

    other.close = broken_close  # type: ignore[method-assign]
    commit.close()
    commit.close()
    commit.write(batch(factory, "c"))
    assert commit.stats.dropped == 4
    assert other.envelopes == []
    messages = records(caplog)
    assert "store: 2 envelopes could not be written and are lost" in messages
    assert (
        "events failed and is disabled for the rest of the session: [Errno 9] Bad file descriptor" in messages
    )
    assert messages[-1] == "envelopes written after the session was closed (a bug in happy): dropped"


def test_commit_point_uses_the_given_logger(
    store: SessionStore, factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    bad = MemorySink("bad")
    bad.fail_with = ValueError("boom")
    CommitPoint(store, "s1", [bad], log=logging.getLogger("custom")).write(batch(factory, "a"))
    assert [(r.name, r.levelno) for r in caplog.records] == [("custom", logging.ERROR)]


def test_an_inherited_events_fd_is_not_passed_on_to_claude() -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)  # as a shell's `3>file` leaves it
    try:
        open_events_output(f"fd:{write_end}")
        assert not os.get_inheritable(write_end)  # Claude must not hold the reader's pipe open
    finally:
        os.close(read_end)
        os.close(write_end)


def _sink_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("sink ")]


def test_a_regular_events_file_is_written_in_line_and_a_pipe_from_a_thread(tmp_path: Path) -> None:
    # A thread woken per batch cost more than the write to a file (which the store's own
    # commit, just before, already does in line); a pipe's reader may be slow.
    path = tmp_path / "events.jsonl"
    with Session(tmp_path / "home", tmp_path, events=open_events_output(str(path))) as session:
        session.mirror.notice("one")
        assert b'"one"' in path.read_bytes()  # written before `notice` returned
        assert _sink_threads() == []
    read_end, write_end = os.pipe()
    try:
        with Session(tmp_path / "home", tmp_path, events=open_events_output(f"fd:{write_end}")) as session:
            session.mirror.notice("two")
            assert _sink_threads() == [f"sink events fd:{write_end}"]
        assert b'"two"' in os.read(read_end, 1 << 16)
    finally:
        os.close(read_end)
        os.close(write_end)


class Stalled(MemorySink):
    """A best-effort sink whose writes wait until `go` is set (a reader that does not drain)."""

    def __init__(self) -> None:
        super().__init__("events")
        self.go = threading.Event()

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
        assert self.go.wait(10)
        super().write(envelopes, processed_keys)


def test_a_slow_best_effort_sink_never_holds_up_the_store_and_keeps_the_order(
    store: SessionStore, factory: EnvelopeFactory
) -> None:
    slow = Stalled()
    commit = CommitPoint(store, "s1", [BackgroundSink(slow)])
    batches = [batch(factory, str(n)) for n in range(50)]
    for sent in batches:
        commit.write(sent)  # returns at once although the sink is stuck
    assert stored(store) == [env for sent in batches for env in sent]
    assert slow.envelopes == []
    slow.go.set()
    commit.close()
    assert slow.envelopes == [env for sent in batches for env in sent]
    assert commit.stats.disabled == ()


def test_a_background_sink_reports_a_failure_by_the_next_write_or_at_close(
    store: SessionStore, factory: EnvelopeFactory
) -> None:
    failing = MemorySink("events")
    failing.fail_with = OSError(28, "No space left on device")
    commit = CommitPoint(store, "s1", [BackgroundSink(failing)])
    commit.write(batch(factory, "a"))  # fails in the thread; nobody writes again
    commit.close()
    assert commit.stats.failures == ("events: No space left on device",)
    assert len(stored(store)) == 2  # the store has everything all the same


def test_a_background_sink_gives_up_on_a_reader_too_slow_to_keep_up(factory: EnvelopeFactory) -> None:
    slow = Stalled()
    sink = BackgroundSink(slow, limit=3, close_wait=0.01)
    sink.write(batch(factory, "a"))  # 2 envelopes
    with pytest.raises(OSError, match="too slow"):
        sink.write(batch(factory, "b"))
    with pytest.raises(OSError, match="still waiting"):
        sink.close()
    slow.go.set()
