"""The ordered queue between the SDK reader and the session (claude/queue.py)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import AssistantMessage, TextBlock, ToolUseBlock
from hypothesis import given
from hypothesis import strategies as st

from happy_launcher.claude.converter import Converter
from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.queue import MAX_BATCH, Close, OrderedQueue, PromptSent, QueueItem
from happy_launcher.claude.records import Record, make_record
from happy_launcher.claude.sdk_items import Partial, SessionStarted, TurnResult
from happy_launcher.protocol import SequentialIds, TurnStatus
from happy_launcher.session.commit import CommitPoint
from happy_launcher.session.mirror import Mirror
from happy_launcher.session.sinks import MemorySink
from happy_launcher.store.sessions import SessionStore
from tests.support.records import assistant, text


class Recorder:
    """A QueueTarget that records every call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.batches: list[int] = []
        self.takes = 0  # batches taken from the queue (each one store transaction)

    def batch(self) -> AbstractContextManager[object]:
        self.takes += 1
        return nullcontext()

    def deliver(self, records: Sequence[Record]) -> None:
        self.batches.append(len(records))
        self.calls += [("record", r.uuid) for r in records]

    def prompt_sent(self, text: str, uuid: str | None = None, *, taken: bool = True) -> None:
        self.calls.append(("prompt", text) if taken else ("late prompt", text))

    def end_turn(
        self, status: TurnStatus, service: str | None = None, *, taken: tuple[str, ...] | None = None
    ) -> None:
        self.calls.append(("end", status))

    def close_turn(self, status: TurnStatus) -> None:
        self.calls.append(("close", status))


def record(n: int) -> Record:
    return make_record({"type": "assistant", "uuid": f"u{n}", "message": {"content": []}})


def expected_call(item: QueueItem) -> tuple[str, Any] | None:
    if isinstance(item, Record):
        return ("record", item.uuid)
    if isinstance(item, PromptSent):
        return ("prompt", item.text)
    if isinstance(item, TurnResult):
        return ("end", item.status)
    if isinstance(item, Close):
        return ("close", item.status)
    return None


_ITEMS = st.one_of(
    st.integers(0, 10**6).map(record),
    st.text(max_size=3).map(PromptSent),
    st.sampled_from([TurnResult("completed"), TurnResult("failed", "why"), TurnResult("cancelled")]),
    st.sampled_from([Close("completed"), Close("cancelled")]),
    st.text(max_size=3).map(Partial),
)


@given(st.lists(st.lists(_ITEMS, max_size=40), max_size=8))
def test_items_are_applied_in_the_order_they_were_put(bursts: list[list[QueueItem]]) -> None:
    """Bursts put while the consumer runs: every item applied once, in order, none dropped."""
    target, notices = Recorder(), list[object]()
    queue = OrderedQueue()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(queue.run, target, notices.append)
            for burst in bursts:
                queue.put_all(burst)
                await anyio.lowlevel.checkpoint()  # let the consumer take what is there
            queue.close()

    anyio.run(main)
    items = [item for burst in bursts for item in burst]
    assert target.calls == [call for item in items if (call := expected_call(item)) is not None]
    assert notices == [item for item in items if isinstance(item, Partial)]
    assert queue.pending == 0


def test_put_never_blocks_and_records_waiting_together_are_one_batch() -> None:
    target = Recorder()
    queue = OrderedQueue()
    queue.put_all(record(n) for n in range(3 * MAX_BATCH + 1))  # long before the consumer runs
    queue.put(PromptSent("next"))
    queue.put_all(record(n) for n in range(2))
    assert queue.pending == 3 * MAX_BATCH + 4
    queue.close()
    anyio.run(queue.run, target)
    assert target.batches == [MAX_BATCH, MAX_BATCH, MAX_BATCH, 1, 2]
    assert target.takes == 4  # the last take: a record, the prompt, two records
    assert target.calls[3 * MAX_BATCH + 1] == ("prompt", "next")


def test_flushed_waits_until_the_consumer_caught_up() -> None:
    target = Recorder()
    queue = OrderedQueue()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(queue.run, target)
            await queue.flushed()  # nothing put: at once
            queue.put_all([record(1), PromptSent("p"), record(2)])
            with anyio.fail_after(5):
                await queue.flushed()
            assert [c[0] for c in target.calls] == ["record", "prompt", "record"]
            queue.close()

    anyio.run(main)


def test_nothing_can_be_put_after_close() -> None:
    queue = OrderedQueue()
    queue.close()
    with pytest.raises(anyio.ClosedResourceError):
        queue.put(record(1))


SLEEP = {"command": "sleep 9"}
SLEEP_TITLES = {"title": "sleep 9", "description": "sleep 9"}


def test_abort_ends_running_calls_then_closes_the_turn_after_what_was_queued() -> None:
    converter = Converter()
    sink = MemorySink()
    mirror = Mirror(Mapper(SequentialIds()), sink, clock=lambda: 1)
    queue = OrderedQueue()
    queue.put(PromptSent("go", "p1"))
    call = ToolUseBlock("toolu_1", "Bash", SLEEP)
    queue.put_all(converter.convert(AssistantMessage([TextBlock("running"), call], "m", uuid="a1")))
    queue.abort(converter.interrupted())
    queue.close()
    anyio.run(queue.run, mirror)
    assert [e.to_dict()["ev"] for e in sink.envelopes][2:] == [
        {"t": "text", "text": "running"},
        {"t": "tool-call-start", "call": "toolu_1", "name": "Bash", **SLEEP_TITLES, "args": SLEEP},
        {"t": "tool-call-end", "call": "toolu_1", "status": "cancelled"},
        {"t": "turn-end", "status": "cancelled"},
    ]


def test_a_failing_best_effort_sink_neither_stops_the_queue_nor_loses_envelopes(tmp_path: Path) -> None:
    events = MemorySink("events")
    events.fail_with = OSError(28, "No space left on device")
    with SessionStore.open(tmp_path) as store:
        store.create_session("s1", cwd="/", started_at=1)
        commit = CommitPoint(store, "s1", [events])
        mirror = Mirror(Mapper(SequentialIds()), commit, clock=lambda: 1, seen=set())
        queue = OrderedQueue()
        for n in range(50):
            queue.put(PromptSent(f"p{n}"))
            queue.put(make_record(assistant(text(f"a{n}"), uuid=f"u{n}").data))
            queue.put(TurnResult("completed"))
        queue.close()
        anyio.run(queue.run, mirror)
        commit.close()
        assert len(store.envelopes("s1")) == 50 * 4
        assert store.processed_keys("s1") == {f"u{n}" for n in range(50)}
    assert events.envelopes == [] and commit.stats.disabled == ("events",)


def test_notices_go_to_their_callback_in_order() -> None:
    seen: list[object] = []
    queue = OrderedQueue()
    queue.put_all([SessionStarted("S"), Partial("a"), record(1), Partial("b")])
    queue.close()
    anyio.run(queue.run, Recorder(), seen.append)
    assert seen == [SessionStarted("S"), Partial("a"), Partial("b")]


class CountingSink(MemorySink):
    def __init__(self) -> None:
        super().__init__("store")
        self.writes = 0

    def write(self, envelopes: Sequence[Any], processed_keys: Sequence[str] = ()) -> None:
        self.writes += 1
        super().write(envelopes, processed_keys)


def test_what_the_consumer_takes_at_once_is_one_store_write_in_order() -> None:
    sink = CountingSink()
    queue = OrderedQueue()
    for n in range(3):
        queue.put(PromptSent(f"p{n}", f"p{n}"))
        queue.put(make_record(assistant(text(f"a{n}"), uuid=f"u{n}").data))
        queue.put(TurnResult("completed"))
    queue.close()
    anyio.run(queue.run, Mirror(Mapper(SequentialIds()), sink, clock=lambda: 1, seen=set()))
    assert sink.writes == 1
    assert [e.ev.t for e in sink.envelopes] == ["text", "turn-start", "text", "turn-end"] * 3
    assert sink.keys == ["p0", "u0", "p1", "u1", "p2", "u2"]


def test_a_failure_inside_a_batch_still_writes_what_was_made() -> None:
    sink = CountingSink()
    mirror = Mirror(Mapper(SequentialIds()), sink, clock=lambda: 1)
    with pytest.raises(RuntimeError), mirror.batch():
        mirror.prompt_sent("kept", "p1")
        raise RuntimeError("a bug further on")
    assert sink.writes == 1 and [e.ev.t for e in sink.envelopes] == ["text", "turn-start"]
