"""The session side of the control socket (runner/controller.py) with a real Session and store:
facts, messages stored before a front exists, refusals, and the continuity check after a switch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import orjson
import pytest

from happy_launcher.local.front import WatchOnlyFront
from happy_launcher.protocol import Envelope
from happy_launcher.runner.controller import SessionController
from happy_launcher.session.launcher import ClaudeStart, Run
from happy_launcher.session.ports import MAX_MESSAGE, ControlRefused, InputMode, Mode
from happy_launcher.store.sessions import SessionStore
from tests.support.records import rec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


def line(uuid: str, parent: str | None) -> bytes:
    return (
        orjson.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "message": {"content": "x"}})
        + b"\n"
    )


@pytest.fixture
def ref(tmp_path: Path) -> Run:
    return Run(tmp_path / "home", tmp_path)


def controller(ref: Run, transcript: Path) -> SessionController:
    return SessionController(ref, mode="local", pid=4242, transcript=lambda _: transcript, clock=lambda: 7)


async def test_facts_before_and_after_claude_names_its_session(ref: Run, tmp_path: Path) -> None:
    c = controller(ref, tmp_path / "t.jsonl")
    facts = c.facts()
    assert (facts.happy_session_id, facts.mode, facts.pid, facts.busy) == (None, "local", 4242, False)
    ref.get().set_claude_session("c-1", "startup", None)
    assert c.facts().claude_session_id == "c-1" and c.facts().happy_session_id == ref.get().id
    assert c.history(0, 10) == []


async def test_a_client_that_comes_after_the_run_ended_its_session_is_refused_and_opens_none(
    tmp_path: Path,
) -> None:
    # The bridge follows a short `-p` run: its subscription can come as the run ends. Opening
    # the session then made a new one (a start, not a resume) or reopened the ended one.
    ref = Run(tmp_path / "home", tmp_path, starts_on=ClaudeStart("c-1", "startup", tmp_path / "c-1.jsonl"))
    c = controller(ref, tmp_path / "t.jsonl")
    first = ref.get().id
    ref.end("completed")
    with pytest.raises(ControlRefused, match="ended"):
        c.history(0, 10)
    with pytest.raises(ControlRefused, match="ended"):
        await c.send("m-1", "hello")
    assert c.facts().happy_session_id is None
    with SessionStore.open(tmp_path / "home") as store:
        [only] = store.list_sessions()
    assert (only.id, only.status) == (first, "completed")


async def test_a_message_with_no_front_is_stored_for_the_next_one(ref: Run, tmp_path: Path) -> None:
    c = controller(ref, tmp_path / "t.jsonl")
    first = await c.send("m-1", "hello")
    again = await c.send("m-1", "hello")
    assert (first.duplicate, again.duplicate, again.message_seq) == (False, True, first.message_seq)
    assert [p.text for p in ref.get().pending_prompts()] == ["hello"]
    with pytest.raises(ControlRefused, match="empty"):
        await c.send("m-2", "  ")
    with pytest.raises(ControlRefused, match="switching"):
        await c.switch("remote")
    with pytest.raises(ControlRefused, match="no pending permission request"):
        c.answer("nope", True, None)


async def test_inject_is_the_sessions_default_or_the_messages_own_and_takes_only_text(
    tmp_path: Path,
) -> None:
    ref = Run(tmp_path / "home", tmp_path, remote_input="inject")
    c = controller(ref, tmp_path / "t.jsonl")
    await c.send("m-1", "one\r\ntwo")
    await c.send("m-2", "sent", "switch")
    pending = ref.get().pending_prompts()
    assert [(p.text, p.inject) for p in pending] == [("one\ntwo", True), ("sent", False)]
    with pytest.raises(ControlRefused, match=r"control characters \(U\+001B\)"):
        await c.send("m-3", "esc \x1b")
    assert await c.send("m-4", "tab\tok", "switch")  # only what is typed must be text


async def test_a_broken_chain_after_a_switch_is_a_service_envelope_and_a_note(
    ref: Run, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(line("a", None) + line("b", "a"))
    session = ref.get()
    session.set_claude_session("c-1", "startup", transcript)
    c = controller(ref, transcript)
    notes: list[str] = []
    noted = anyio.Event()

    class Watch:
        def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
            notes.extend(e.ev.text for e in envelopes if e.ev.t == "service")
            if notes:
                noted.set()

    session.subscribe(Watch())
    async with anyio.create_task_group() as tg:
        tg.start_soon(c.check_continuity)
        c.switching("remote")
        with transcript.open("ab") as f:
            f.write(line("c", "a"))  # the new front end went on from `a`: `b` is lost to the model
        session.deliver([rec({"type": "user", "uuid": "c", "parentUuid": "a", "message": {"content": "hi"}})])
        with anyio.fail_after(5):
            await noted.wait()
        tg.cancel_scope.cancel()
    assert "did not continue where it was left" in notes[0]
    assert session.id is not None
    assert session.store.continuity_break(session.id) == notes[0]
    assert c.facts().mode == "remote"


async def test_a_continued_chain_says_nothing(ref: Run, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(line("a", None))
    session = ref.get()
    session.set_claude_session("c-1", "startup", transcript)
    c = controller(ref, transcript)
    async with anyio.create_task_group() as tg:
        tg.start_soon(c.check_continuity)
        c.switching("remote")
        with transcript.open("ab") as f:
            f.write(line("b", "a"))
        session.deliver([rec({"type": "user", "uuid": "b", "parentUuid": "a", "message": {"content": "hi"}})])
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert session.id is not None and session.store.continuity_break(session.id) is None
    assert c._chain is None  # decided: no check pending any more


class StubFront:
    """A front end in `mode`, running a turn while `busy`; `abort` ends it."""

    def __init__(self, mode: Mode, *, busy: bool) -> None:
        self.mode, self.busy, self.switches = mode, busy, 0

    def check_inbound(self) -> None:
        pass

    def request_switch(self) -> None:
        self.switches += 1

    async def abort(self) -> None:
        self.busy = False

    def inbound(self) -> None:
        pass


async def test_switch_and_abort_say_what_they_did(ref: Run, tmp_path: Path) -> None:
    c = controller(ref, tmp_path / "t.jsonl")
    front = ref.front = StubFront("local", busy=True)
    assert await c.switch("local") == "already-there" and front.switches == 0
    assert await c.switch("remote") == "switched" and front.switches == 1
    assert await c.abort() == "aborted" and not front.busy
    assert await c.abort() == "no-turn"
    ref.front = None
    assert await c.abort() == "no-turn"  # between front ends: no turn runs


async def test_a_message_over_1_mib_is_refused_in_words(ref: Run, tmp_path: Path) -> None:
    c = controller(ref, tmp_path / "t.jsonl")
    with pytest.raises(ControlRefused, match=r"^the message is larger than 1 MiB \(1048577 bytes\)"):
        await c.send("m-1", "é" * (MAX_MESSAGE // 2) + "x")  # two bytes each
    assert ref.get().pending_prompts() == []


async def test_a_watch_only_run_refuses_every_message_before_looking_at_its_text(tmp_path: Path) -> None:
    ref = Run(tmp_path / "home", tmp_path, remote_input="inject")
    ref.front = WatchOnlyFront(ref)
    c = controller(ref, tmp_path / "t.jsonl")
    sends: list[tuple[str, InputMode | None]] = [("hi", None), ("esc \x1b", None), ("hi", "switch")]
    for text, mode in sends:
        with pytest.raises(ControlRefused, match="can be watched, but it takes no messages"):
            await c.send("m-1", text, mode)
    assert ref.get().pending_prompts() == []


async def test_the_front_end_is_noted_in_the_store_as_the_session_binds_and_at_each_switch(
    ref: Run, tmp_path: Path
) -> None:
    c = SessionController(
        ref, mode="local", pid=4242, transcript=lambda _: tmp_path / "t.jsonl", terminal=False
    )
    ref.get().set_claude_session("c-1", "startup", None)

    def noted() -> tuple[str | None, bool | None]:
        (summary,) = ref.get().store.session_summaries()
        return summary.mode, summary.terminal

    assert noted() == ("local", False)
    c.switching("remote")
    assert noted() == ("remote", False)
