"""Inbound messages, exactly once (session/inbound.py, the commit point, the mirror, the queue's
wait for a prompt to be taken, and the session's restart): fast units with the real store."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import anyio
import orjson
import pytest
from anyio import wait_all_tasks_blocked

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.queue import OrderedQueue, PromptSent, Taken
from happy_launcher.claude.records import Record
from happy_launcher.claude.sdk_items import TurnResult
from happy_launcher.errors import StoreFullError
from happy_launcher.protocol import SequentialIds
from happy_launcher.session.commit import CommitPoint
from happy_launcher.session.core import Session
from happy_launcher.session.inbound import InboundLedger, accept, pending_prompts
from happy_launcher.session.mirror import Mirror
from happy_launcher.session.ports import NO_META, MessageMeta
from happy_launcher.store.resume import Delivered
from happy_launcher.store.sessions import SessionStore
from tests.support.records import assistant, text, user
from tests.support.store import fill_disk, free_disk
from tests.unit.claude.test_queue import Recorder, record

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore.open(tmp_path / "home") as s:
        s.create_session("s1", cwd="/w", started_at=1)
        yield s


def mirror_on(store: SessionStore, ledger: InboundLedger) -> tuple[Mirror, CommitPoint]:
    commit = CommitPoint(store, "s1", delivered=ledger.drain)
    return Mirror(Mapper(SequentialIds()), commit, clock=lambda: 7, seen=set(), inbound=ledger), commit


def test_accept_stores_once_and_acknowledges_a_repeat_with_the_first(store: SessionStore) -> None:
    first = accept(store, "s1", "m1", "hello", 5, "p-1")
    again = accept(store, "s1", "m1", "hello (retried)", 6, "p-2")
    other = accept(store, "s1", "m2", "next", 7, "p-3")
    assert (first.message_seq, first.duplicate) == (1, False)
    assert (again.message_seq, again.duplicate) == (1, True)
    assert other.message_seq == 2
    assert [(p.seq, p.message_id, p.text, p.uuid) for p in pending_prompts(store, "s1")] == [
        (1, "m1", "hello", "p-1"),
        (2, "m2", "next", "p-3"),
    ]


def test_a_permission_mode_and_a_model_are_stored_with_the_message(store: SessionStore) -> None:
    accept(store, "s1", "m1", "plan this", 5, "p-1", meta=MessageMeta("plan", "claude-opus-4-1"))
    again = accept(store, "s1", "m1", "plan this", 6, "p-2", meta=MessageMeta("bypassPermissions"))
    accept(store, "s1", "m2", "as you were", 7, "p-3", "inject")
    store.append_inbound("s1", "old", 8, b'{"text":"from an older happy","uuid":"p-4"}')
    assert again.duplicate
    assert [(p.message_id, p.meta, p.inject) for p in pending_prompts(store, "s1")] == [
        ("m1", MessageMeta("plan", "claude-opus-4-1"), False),  # a repeat keeps the first
        ("m2", NO_META, True),
        ("old", NO_META, False),
    ]


def test_a_stored_permission_mode_this_happy_does_not_know_is_unreadable(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.append_inbound("s1", "newer", 1, b'{"text":"hi","uuid":"p-1","permission_mode":"auto"}')
    store.append_inbound("s1", "odd", 2, b'{"text":"hi","uuid":"p-2","model":7}')
    with caplog.at_level(logging.ERROR):
        assert pending_prompts(store, "s1") == []
    assert "newer cannot be read" in caplog.text and "odd cannot be read" in caplog.text


def test_an_unreadable_body_is_reported_and_left_pending(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.append_inbound("s1", "bad", 1, b"\xff not json")
    store.append_inbound("s1", "odd", 2, b'{"text": 3}')
    accept(store, "s1", "good", "fine", 3, "p-1")
    with caplog.at_level(logging.ERROR):
        assert [p.message_id for p in pending_prompts(store, "s1")] == ["good"]
    assert "bad cannot be read" in caplog.text and "odd cannot be read" in caplog.text
    assert len(store.pending_inbound("s1")) == 3  # nothing lost


def test_the_prompt_taken_is_marked_delivered_in_the_batch_of_its_user_text(store: SessionStore) -> None:
    ledger = InboundLedger()
    accepted = accept(store, "s1", "m1", "hi", 1, "p-1")
    ledger.expect("p-1", accepted.message_seq)
    mirror, _ = mirror_on(store, ledger)
    mirror.prompt_sent("hi", "p-1", taken=True)
    assert store.pending_inbound("s1") == []
    assert [env.ev.t for _, env in store.envelopes("s1")] == ["text", "turn-start"]
    assert store.processed_keys("s1") == {"p-1"}


def test_a_late_prompt_is_marked_when_its_record_comes_with_no_second_user_text(
    store: SessionStore,
) -> None:
    ledger = InboundLedger()
    ledger.expect("p-1", accept(store, "s1", "m1", "hi", 1, "p-1").message_seq)
    mirror, _ = mirror_on(store, ledger)
    mirror.prompt_sent("hi", "p-1", taken=False)
    assert len(store.pending_inbound("s1")) == 1  # committed, not known to be taken
    mirror.deliver([user("hi", uuid="p-1")])  # the transcript's copy: skipped, but it tells
    assert store.pending_inbound("s1") == []
    mirror.prompt_sent("hi", "p-1")  # sent again after a restart: no second user text
    assert [env.ev.t for _, env in store.envelopes("s1")] == ["text", "turn-start", "turn-end", "turn-start"]


def test_a_store_failure_commits_neither_the_envelopes_nor_the_delivery(store: SessionStore) -> None:
    ledger = InboundLedger()
    ledger.expect("p-1", accept(store, "s1", "m1", "x" * 20_000, 1, "p-1").message_seq)
    mirror, commit = mirror_on(store, ledger)
    fill_disk(store)
    mirror.prompt_sent("x" * 20_000, "p-1")
    assert store.envelopes("s1") == [] and len(store.pending_inbound("s1")) == 1
    assert commit.stats.backlog > 0
    free_disk(store)
    commit.write([])  # a chance to retry the backlog
    assert [env.ev.t for _, env in store.envelopes("s1")] == ["text", "turn-start"]
    assert store.pending_inbound("s1") == []


def test_the_store_marks_a_delivery_only_with_its_batch(store: SessionStore) -> None:
    seq, _ = store.append_inbound("s1", "m1", 1, b"{}")
    fill_disk(store)
    with pytest.raises(StoreFullError):
        store.append_envelopes("s1", [], ["k" * 20_000] * 3, delivered=[Delivered(seq, 9)])
    assert len(store.pending_inbound("s1")) == 1
    free_disk(store)
    store.append_envelopes("s1", [], ["k"], delivered=[Delivered(seq, 9)])
    store.append_envelopes("s1", [], ["k2"], delivered=[Delivered(seq, 99)])  # taken again: kept
    assert store.pending_inbound("s1") == []
    with sqlite3.connect(store.data_file("s1")) as conn:
        assert conn.execute("SELECT delivered_at FROM inbound").fetchall() == [(9,)]


class Gate:
    """A prompt's wait, settled by the test."""

    def __init__(self) -> None:
        self.waiting = anyio.Event()
        self.outcome: Taken | None = None
        self._settled = anyio.Event()

    async def __call__(self) -> Taken:
        self.waiting.set()
        await self._settled.wait()
        assert self.outcome is not None
        return self.outcome

    def settle(self, outcome: Taken) -> None:
        self.outcome = outcome
        self._settled.set()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("outcome", "prompt"), [("taken", ("prompt", "go")), ("late", ("late prompt", "go")), ("skip", None)]
)
async def test_a_prompt_holds_back_what_is_queued_behind_it_until_it_is_taken(
    outcome: Taken, prompt: tuple[str, str] | None
) -> None:
    target, queue, gate = Recorder(), OrderedQueue(), Gate()
    queue.put(record(1))
    queue.put(PromptSent("go", "p-1", taken=gate))
    queue.put_all([record(2), TurnResult("completed")])
    async with anyio.create_task_group() as tg:
        tg.start_soon(queue.run, target)
        await gate.waiting.wait()
        await wait_all_tasks_blocked()
        assert target.calls == [("record", "u1")]  # the turn's items wait behind the prompt
        gate.settle(outcome)
        await queue.flushed()
        queue.close()
    after = [("record", "u2"), ("end", "completed")]
    assert target.calls == [("record", "u1"), *([prompt] if prompt else []), *after]


def test_a_resumed_session_expects_its_pending_prompts_and_marks_them_from_the_transcript(
    tmp_path: Path,
) -> None:
    home, transcript = tmp_path / "home", tmp_path / "c-1.jsonl"
    with Session(home, tmp_path) as first:
        first.set_claude_session("c-1", "startup", transcript)
        accepted = first.accept_inbound("m1", "while you were away")
        assert first.accept_inbound("m1", "again").duplicate and first.has_pending()
        [prompt] = first.pending_prompts()
        happy_id = first.id
    with Session(home, tmp_path) as second:
        second.set_claude_session("c-1", "resume", transcript)
        assert happy_id is not None and second.id == happy_id and second.has_pending()
        # What Claude wrote before the first happy died: the prompt, taken, and its answer.
        second.deliver([user(prompt.text, uuid=prompt.uuid), assistant(text("ok"), stop_reason="end_turn")])
        assert not second.has_pending()
        with SessionStore.open(home) as store:
            [(_, env)] = [(s, e) for s, e in store.envelopes(happy_id) if e.role == "user"]
    assert accepted.message_seq == prompt.seq and env.claudeUuid == prompt.uuid


def test_a_message_before_claude_names_its_session_binds_a_new_session(tmp_path: Path) -> None:
    with Session(tmp_path / "home", tmp_path) as session:
        assert session.id is None and not session.has_pending()
        session.accept_inbound("m1", "early")
        assert session.id is not None and session.has_pending()


def test_history_starts_where_the_session_first_mirrored_a_file(tmp_path: Path) -> None:
    home, main, sub = tmp_path / "home", tmp_path / "c-1.jsonl", tmp_path / "c-1" / "subagents" / "a.jsonl"
    with Session(home, tmp_path) as first:
        assert first.history_sizes({main: 100}) == {main: 100}  # not bound yet: remembered
        first.set_claude_session("c-1", "resume", main)
        assert first.history_sizes({main: 150, sub: 10}) == {main: 150, sub: 10}  # a new session: now
    with Session(home, tmp_path) as second:
        second.set_claude_session("c-1", "resume", main)
        assert second.history_sizes({main: 300, sub: 40}) == {main: 100, sub: 10}  # where it began
    with Session(home, tmp_path) as fresh:
        fresh.set_claude_session("c-2", "startup", tmp_path / "c-2.jsonl")
    with Session(home, tmp_path) as again:
        again.set_claude_session("c-2", "resume", tmp_path / "c-2.jsonl")
        assert again.history_sizes({tmp_path / "c-2.jsonl": 500}) == {}  # all of it is the session's


def on_disk(path: Path, *records: Record) -> list[Record]:
    """Claude wrote `records` to its transcript `path`."""
    with path.open("ab") as f:
        f.write(b"".join(orjson.dumps(r.data) + b"\n" for r in records))
    return list(records)


def user_texts(home: Path, happy_id: str) -> list[str]:
    with SessionStore.open(home) as store:
        return [e.ev.text for _, e in store.envelopes(happy_id) if e.role == "user" and e.ev.t == "text"]


def test_a_message_taken_but_never_answered_before_a_kill_is_sent_again_without_its_text_twice(
    tmp_path: Path,
) -> None:
    home, transcript = tmp_path / "home", tmp_path / "c-1.jsonl"
    with Session(home, tmp_path) as first:
        first.set_claude_session("c-1", "startup", transcript)
        first.accept_inbound("m1", "are you there?")
        [prompt] = first.pending_prompts()
        first.mirror.prompt_sent(prompt.text, prompt.uuid, taken=False)
        taken = on_disk(transcript, user(prompt.text, uuid=prompt.uuid))
        first.deliver(taken)  # Claude took it; then happy and Claude were killed before its reply
        assert not first.has_pending()
        happy_id = first.id
    with Session(home, tmp_path) as second:
        second.set_claude_session("c-1", "resume", transcript)
        [again] = second.pending_prompts()
        assert (again.seq, again.text, again.again) == (prompt.seq, prompt.text, True)
        assert again.uuid != prompt.uuid
        second.deliver(taken)  # the restart reads the old record again: not this delivery
        assert second.has_pending()
        sent = second.mirror.prompt_sent(again.text, again.uuid)  # remote mode sends it again
        assert [e.role for e in sent] == ["agent"] and not second.has_pending()
        second.deliver([assistant(text("yes"), parent=again.uuid, stop_reason="end_turn")])
    assert happy_id is not None and user_texts(home, happy_id) == ["are you there?"]
    with Session(home, tmp_path) as third:  # answered now: nothing to send again
        third.set_claude_session("c-1", "resume", transcript)
        assert not third.has_pending()


def test_a_message_taken_as_happy_was_killed_before_its_tail_saw_it_is_sent_again(tmp_path: Path) -> None:
    home, transcript = tmp_path / "home", tmp_path / "c-1.jsonl"
    with Session(home, tmp_path) as first:
        first.set_claude_session("c-1", "startup", transcript)
        first.accept_inbound("m1", "just sent", meta=MessageMeta("acceptEdits", "sonnet"))
        [prompt] = first.pending_prompts()
        first.mirror.prompt_sent(prompt.text, prompt.uuid, taken=False)
        taken = on_disk(transcript, user(prompt.text, uuid=prompt.uuid))  # happy killed before reading it
        happy_id = first.id
    with Session(home, tmp_path) as second:
        second.set_claude_session("c-1", "resume", transcript)
        second.deliver(taken)  # the restart's tail: the old record is not this delivery
        [again] = second.pending_prompts()
        assert (again.seq, again.again) == (prompt.seq, True) and again.uuid != prompt.uuid
        assert again.meta == MessageMeta("acceptEdits", "sonnet")  # sent again as it was asked
        second.mirror.prompt_sent(again.text, again.uuid)
        assert not second.has_pending()
    assert happy_id is not None and user_texts(home, happy_id) == ["just sent"]


def test_a_typed_message_taken_but_never_answered_is_typed_again_and_shown_once(tmp_path: Path) -> None:
    home, transcript = tmp_path / "home", tmp_path / "c-1.jsonl"
    with Session(home, tmp_path) as first:
        first.set_claude_session("c-1", "startup", transcript)
        first.accept_inbound("m1", "typed for you", mode="inject")
        [prompt] = first.pending_prompts()
        first.inbound.expect_text(prompt.text, prompt.seq)  # the injector types it
        taken = on_disk(transcript, user(prompt.text, uuid="tui-1"))
        first.deliver(taken)
        happy_id = first.id
    with Session(home, tmp_path) as second:
        second.set_claude_session("c-1", "resume", transcript)
        [again] = second.pending_prompts()
        assert again.inject and again.again
        second.inbound.expect_text(again.text, again.seq)
        second.deliver(taken)  # the old record, read again, is not the new delivery
        assert second.has_pending()
        out = second.deliver([user(again.text, uuid="tui-2", parent="tui-1")])
        assert [e.role for e in out] == ["agent"] and not second.has_pending()  # a turn, no text
    assert happy_id is not None and user_texts(home, happy_id) == ["typed for you"]


def test_an_unanswered_prompt_of_the_users_own_is_not_sent_again(tmp_path: Path) -> None:
    home, transcript = tmp_path / "home", tmp_path / "c-1.jsonl"
    with Session(home, tmp_path) as first:
        first.set_claude_session("c-1", "startup", transcript)
        first.accept_inbound("m1", "from the phone")
        [prompt] = first.pending_prompts()
        first.deliver(on_disk(transcript, user(prompt.text, uuid=prompt.uuid)))
        first.deliver(on_disk(transcript, assistant(text("ok"), parent=prompt.uuid, stop_reason="end_turn")))
        first.deliver(on_disk(transcript, user("typed in the TUI", uuid="own")))
    with Session(home, tmp_path) as second:
        second.set_claude_session("c-1", "resume", transcript)
        assert not second.has_pending()
