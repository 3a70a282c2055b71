"""Envelope sinks and the fan-out that keeps the session alive when one of them fails."""

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
from happy_launcher.session.events_output import open_events_output
from happy_launcher.session.sinks import FanOut, JsonLinesSink, MemorySink, StoreSink
from happy_launcher.session.store import SessionStore

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


def test_store_sink_commits_envelopes_with_keys(store: SessionStore, factory: EnvelopeFactory) -> None:
    sink = StoreSink(store, "s1")
    sent = batch(factory, "a")
    sink.write(sent, ["k1"])
    sink.write([], ["k2"])  # records that map to nothing are still marked processed
    sink.close()
    assert stored(store) == sent
    assert store.processed_keys("s1") == {"k1", "k2"}
    store.list_sessions()  # closing the sink left the store open


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


def test_fanout_disables_a_failing_best_effort_sink(
    factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    good, bad = MemorySink("good"), MemorySink("bad")
    fan = FanOut([bad, good])
    bad.fail_with = OSError(28, "No space left on device")
    first, second = batch(factory, "a"), batch(factory, "b")
    fan.write(first)
    bad.fail_with = None  # a disabled sink is not retried, even once it would work
    fan.write(second)
    assert good.envelopes == first + second
    assert bad.envelopes == []
    assert records(caplog) == [
        "bad failed and is disabled for the rest of the session: [Errno 28] No space left on device"
    ]
    assert fan.stats.disabled == ("bad",)


def test_fanout_writes_durable_sinks_first_and_keys_only_batches_only_to_them(
    factory: EnvelopeFactory,
) -> None:
    order: list[str] = []

    class Recording(MemorySink):
        def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
            order.append(self.name)

    fan = FanOut([Recording("file"), Recording("store", durable=True)])
    fan.write(batch(factory, "a"), ["k1"])
    fan.write([], ["k2"])
    assert order == ["store", "file", "store"]


def test_fanout_survives_disk_full_and_retries_the_backlog(
    store: SessionStore, factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    mirror = MemorySink("events")
    fan = FanOut([mirror, StoreSink(store, "s1")])
    before, during, after = batch(factory, "a"), batch(factory, "x" * 20_000), batch(factory, "y")
    fan.write(before, ["k1"])
    fill_disk(store)
    fan.write(during, ["k2"])
    fan.write(after, ["k3"])
    assert mirror.envelopes == before + during + after  # the other sink kept working
    assert stored(store) == before
    assert fan.stats.backlog == len(during) + len(after) + 2
    failures = records(caplog)
    assert len(failures) == 1 and "store failed: the disk is full" in failures[0]

    free_disk(store)
    fan.write([])  # an empty write retries the backlog
    assert stored(store) == before + during + after
    last = batch(factory, "z")
    fan.write(last, ["k4"])
    assert stored(store) == before + during + after + last
    assert store.processed_keys("s1") == {"k1", "k2", "k3", "k4"}
    assert fan.stats.backlog == 0 and fan.stats.dropped == 0
    assert records(caplog)[1:] == ["store recovered: 4 delayed envelopes written, 0 dropped so far"]
    assert fan.stats.disabled == ()


def test_fanout_backlog_is_bounded_and_counts_drops(
    factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    durable = MemorySink("store", durable=True)
    fan = FanOut([durable], backlog_limit=5)
    durable.fail_with = OSError(28, "No space left on device")
    first, second, third = batch(factory, "a"), batch(factory, "b"), batch(factory, "c")
    fan.write(first, ["k1"])  # 3 items
    fan.write(second, ["k2"])  # would make 6 > 5: dropped
    fan.write(second, ["k2"])
    assert fan.stats.dropped == 4
    durable.fail_with = None
    fan.write(third)
    assert durable.envelopes == first + third  # the backlog kept the oldest: a gap-free prefix
    assert durable.keys == ["k1"]
    assert records(caplog) == [
        "store failed: [Errno 28] No space left on device; keeping envelopes in memory and retrying",
        "store: backlog full, dropping new envelopes until it recovers",
        "store recovered: 2 delayed envelopes written, 4 dropped so far",
    ]


def test_fanout_drops_a_batch_the_store_rejects_for_good(
    store: SessionStore, factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    fan = FanOut([StoreSink(store, "s1")])
    first = batch(factory, "a")
    fan.write(first)
    fan.write(first)  # same ids again: a conflict, retrying cannot help
    later = batch(factory, "b")
    fan.write(later)
    assert stored(store) == first + later
    assert fan.stats.dropped == len(first)
    assert any("store rejected 2 envelopes, dropped" in m for m in records(caplog))


def test_fanout_close_retries_then_reports_losses_and_never_raises(
    factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    durable, other = MemorySink("store", durable=True), MemorySink("events")
    fan = FanOut([durable, other])
    durable.fail_with = StoreConflictError("x")
    fan.write(batch(factory, "a"))
    durable.fail_with = OSError(5, "Input/output error")
    fan.write(batch(factory, "b"))

    def broken_close() -> None:
        raise OSError(9, "Bad file descriptor")

    other.close = broken_close  # type: ignore[method-assign]
    fan.close()
    fan.close()
    fan.write(batch(factory, "c"))
    assert fan.stats.dropped == 4
    assert durable.closed
    messages = records(caplog)
    assert "store: 2 envelopes could not be written and are lost" in messages
    assert "events: closing failed: [Errno 9] Bad file descriptor" in messages
    assert messages[-1] == "envelopes written after the sinks were closed (a bug in happy): dropped"


def test_fanout_uses_the_given_logger(factory: EnvelopeFactory, caplog: pytest.LogCaptureFixture) -> None:
    bad = MemorySink("bad")
    bad.fail_with = ValueError("boom")
    FanOut([bad], logging.getLogger("custom")).write(batch(factory, "a"))
    assert [(r.name, r.levelno) for r in caplog.records] == [("custom", logging.ERROR)]


def fill_disk(store: SessionStore) -> None:
    """SQLITE_FULL on the next page allocation: cap the database at its current size."""
    assert store._conn is not None
    (pages,) = store._conn.execute("PRAGMA page_count").fetchone()
    store._conn.execute(f"PRAGMA max_page_count = {pages}")


def free_disk(store: SessionStore) -> None:
    assert store._conn is not None
    store._conn.execute("PRAGMA max_page_count = 1073741823")


def test_an_inherited_events_fd_is_not_passed_on_to_claude() -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)  # as a shell's `3>file` leaves it
    try:
        open_events_output(f"fd:{write_end}")
        assert not os.get_inheritable(write_end)  # Claude must not hold the reader's pipe open
    finally:
        os.close(read_end)
        os.close(write_end)
