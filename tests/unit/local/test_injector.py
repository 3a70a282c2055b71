"""Inject mode's state machine, in-process: the Injector types into a FakePty whose screen the
test draws as Claude's TUI would (whole again on each size change), with a real Session and
TuiScreen. Waits are tiny; every step is awaited on what the fake saw, with a bound."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import anyio
import anyio.lowlevel
import pytest

from happy_launcher.local.fake_pty import FakePty
from happy_launcher.local.injector import Injector, InjectWaits
from happy_launcher.local.tui_input import CLEAR_BOX, ENTER, STASH
from happy_launcher.local.tui_screen import TuiScreen
from happy_launcher.protocol import Envelope, ServiceEv
from happy_launcher.session.launcher import Run
from happy_launcher.session.ports import NO_META, MessageMeta
from tests.support.records import user

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]

BOUND = 2.0  # seconds: far above what any step takes; a hang fails the test instead
FAST = InjectWaits(
    poll=0.001, chunk_gap=0.0, chunk_gap_after_paste=0.0, typed=0.001, confirm=BOUND, box=BOUND
)
RULE = "─" * 40
IDLE = ["  Claude Code", RULE, "❯", RULE, "  ? for shortcuts"]
DRAFT = ["  Claude Code", RULE, "❯ my half-typed", "  draft", RULE, "  ? for shortcuts"]
PASTED = ["  Claude Code", RULE, "❯ [Pasted text #1 +2 lines]", RULE, "  ? for shortcuts"]
DIALOG = ["❯ Create the file", RULE, " Bash command", " Do you want to proceed?", " ❯ 1. Yes", "   3. No"]


class Tui:
    """Claude's TUI as far as the injector sees it: a PTY and the screen drawn on it. It draws
    after every read of what is typed: the lines `react` gives for it, else the same again."""

    def __init__(self, lines: list[str], react: Callable[[bytes], list[str] | None] | None = None) -> None:
        self.lines = lines
        self.react = react
        self.screen = TuiScreen()
        self.pty = FakePty(
            24,
            80,
            on_output=self.screen.observe,
            on_input=self.typed,
            on_resize=lambda _rows, _cols: self.draw(),
        )

    def typed(self, data: bytes) -> None:
        lines = self.react(data) if self.react is not None else None
        self.show(lines if lines is not None else self.lines)

    def show(self, lines: list[str]) -> None:
        self.lines = lines
        self.draw()

    def draw(self) -> None:
        self.pty.emit(b"\x1b[2J\x1b[H" + "\r\n".join(self.lines).encode())

    async def until(self, condition: Sequence[bytes] | None = None, *, looks: int = 0) -> None:
        """Until the writes end with `condition`, or the injector looked `looks` more times."""
        pty, target = self.pty, self.pty.looks + looks
        with anyio.fail_after(BOUND):
            await pty.until(lambda: pty.looks >= target and (not condition or _ends(pty.writes, condition)))

    async def resumed(self) -> None:
        """Until the injector gives the user's keys back."""
        with anyio.fail_after(BOUND):
            await self.pty.until(lambda: not self.pty.paused)


def _ends(writes: list[bytes], tail: Sequence[bytes]) -> bool:
    return writes[-len(tail) :] == list(tail)


class Notices:
    """The service lines a session commits (a failed injection's report among them)."""

    def __init__(self, ref: Run) -> None:
        self.texts: list[str] = []
        self.came = anyio.Event()
        ref.get().subscribe(self)

    async def first(self) -> None:
        with anyio.fail_after(BOUND):
            await self.came.wait()

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        self.texts += [e.ev.text for e in envelopes if isinstance(e.ev, ServiceEv)]
        if self.texts:
            self.came.set()


async def inject(
    ref: Run, injector: Injector, text: str, message_id: str = "m-1", meta: MessageMeta = NO_META
) -> None:
    session = ref.get()
    session.accept_inbound(message_id, text, "inject", meta)
    injector.add(next(p for p in session.pending_prompts() if p.message_id == message_id))


async def taken(ref: Run, tui: Tui, text: str) -> None:
    """Inject `text` into `tui`, whose Claude takes it once Enter comes."""
    injector = Injector(ref, tui.screen, waits=FAST)
    async with anyio.create_task_group() as tg:
        tg.start_soon(injector.run, tui.pty)
        await inject(ref, injector, text)
        await tui.until([ENTER])
        confirm(ref, injector, text)
        await tui.resumed()
        tg.cancel_scope.cancel()


def confirm(ref: Run, injector: Injector, text: str) -> None:
    """Claude took the prompt: its UserPromptSubmit hook fires, its record follows."""
    injector.prompt_submitted(text)
    ref.get().deliver([user(text, uuid="u-1")])


async def test_it_waits_while_a_dialog_is_open_and_types_once_it_closes(ref: Run) -> None:
    tui = Tui(DIALOG)
    injector = Injector(ref, tui.screen, waits=FAST)
    async with anyio.create_task_group() as tg:
        tg.start_soon(injector.run, tui.pty)
        await inject(ref, injector, "hello")
        await tui.until(looks=20)  # an Enter now would answer the dialog
        assert tui.pty.writes == [] and not tui.pty.paused
        tui.show(IDLE)
        await tui.until([b"hello", ENTER])
        assert tui.pty.paused  # the user's keys are held until Claude took it
        confirm(ref, injector, "hello")
        await tui.resumed()
        tg.cancel_scope.cancel()
    assert tui.pty.writes == [b"hello", ENTER]
    assert ref.get().pending_prompts() == []


async def test_it_waits_while_a_permission_request_is_pending(ref: Run) -> None:
    tui = Tui(IDLE)  # the TUI may not show its dialog yet: the broker's request is enough
    injector = Injector(ref, tui.screen, waits=FAST)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ref.permissions.ask, "Bash", {"command": "ls"})
        await anyio.lowlevel.checkpoint()  # asked
        [request] = ref.permissions.pending
        tg.start_soon(injector.run, tui.pty)
        await inject(ref, injector, "hello")
        await tui.until(looks=20)
        assert tui.pty.writes == []
        ref.permissions.withdraw(request.id)
        await tui.until([b"hello", ENTER])
        confirm(ref, injector, "hello")
        await tui.resumed()
        tg.cancel_scope.cancel()


async def test_a_draft_is_stashed_first_and_given_back_before_the_user_types_on(ref: Run) -> None:
    tui = Tui(DRAFT)
    injector = Injector(ref, tui.screen, waits=FAST)
    async with anyio.create_task_group() as tg:
        tg.start_soon(injector.run, tui.pty)
        await inject(ref, injector, "hello")
        await tui.until([STASH])
        await tui.until(looks=20)
        assert tui.pty.writes == [STASH]  # not typed into the draft
        tui.show(IDLE)  # stashed
        await tui.until([b"hello", ENTER])
        confirm(ref, injector, "hello")
        await tui.until(looks=20)
        assert tui.pty.paused  # until the draft is back, the user's keys would land in an empty box
        tui.show(DRAFT)
        await tui.resumed()
        tg.cancel_scope.cancel()
    assert tui.pty.writes == [STASH, b"hello", ENTER]


async def test_a_long_message_goes_in_chunks_then_enter_with_newlines_as_ctrl_j(ref: Run) -> None:
    text = "a" * 120 + "\n" + "b" * 129  # 250 characters, stored as the control socket stores them
    tui = Tui(IDLE)
    await taken(ref, tui, text)
    chunks = tui.pty.writes[:-1]
    assert [len(c) for c in chunks] == [100, 100, 50] and tui.pty.writes[-1] == ENTER
    assert b"".join(chunks) == b"a" * 120 + b"\n" + b"b" * 129  # Ctrl-J: \r would submit
    assert ref.get().pending_prompts() == []


async def test_without_confirmation_it_is_reported_and_stays_undelivered(ref: Run) -> None:
    tui = Tui(IDLE)
    injector = Injector(ref, tui.screen, waits=replace(FAST, confirm=0.01))
    notices = Notices(ref)
    async with anyio.create_task_group() as tg:
        tg.start_soon(injector.run, tui.pty)
        await inject(ref, injector, "hello")
        await notices.first()
        injector.add(ref.get().pending_prompts()[0])  # not typed again in this run
        await inject(ref, injector, "next", "m-2")
        await tui.until([b"next", ENTER])
        confirm(ref, injector, "next")
        await tui.resumed()
        tg.cancel_scope.cancel()
    assert tui.pty.writes == [b"hello", ENTER, b"next", ENTER]
    assert notices.texts == [
        "The message m-1 was not typed into Claude's TUI: Claude did not take it as a prompt within 0.01 s."
    ]
    ref.get().deliver([user("hello", uuid="u-1")])  # the user typing the same text is not it
    assert [p.message_id for p in ref.get().pending_prompts()] == ["m-1"]


async def test_a_permission_mode_or_a_model_is_said_to_stay_the_tuis_and_the_message_typed(ref: Run) -> None:
    tui = Tui(IDLE)
    injector = Injector(ref, tui.screen, waits=FAST)
    notices = Notices(ref)
    async with anyio.create_task_group() as tg:
        tg.start_soon(injector.run, tui.pty)
        await inject(ref, injector, "plan it", meta=MessageMeta("plan", "claude-opus-4-1"))
        await tui.until([b"plan it", ENTER])
        confirm(ref, injector, "plan it")
        await tui.resumed()
        await inject(ref, injector, "plain", "m-2")
        await tui.until([b"plain", ENTER])
        tg.cancel_scope.cancel()
    assert notices.texts == [
        "The message m-1 asks for permission mode plan and model claude-opus-4-1: Claude's TUI keeps "
        "its own permission mode and model, so it is typed as it is."
    ]  # once, and none for a message without them


async def test_keys_the_user_types_meanwhile_are_held_then_typed_in_order(ref: Run) -> None:
    tui = Tui(IDLE)
    injector = Injector(ref, tui.screen, waits=FAST)
    async with anyio.create_task_group() as tg:
        tg.start_soon(injector.run, tui.pty)
        tui.pty.user_types(b"w")  # before the injection: typed at once
        await inject(ref, injector, "hello")
        with anyio.fail_after(BOUND):
            await tui.pty.until(lambda: tui.pty.paused)
        tui.pty.user_types(b"x")
        tui.pty.user_types(b"yz")
        await tui.until([ENTER])
        confirm(ref, injector, "hello")
        await tui.resumed()
        tg.cancel_scope.cancel()
    assert tui.pty.writes == [b"w", b"hello", ENTER, b"x", b"yz"]


async def test_each_write_waits_until_claude_has_read_the_one_before(ref: Run) -> None:
    tui = Tui(IDLE)
    injector = Injector(ref, tui.screen, waits=FAST)
    tui.pty.unread = 100  # Claude is busy: what was typed waits in its terminal
    async with anyio.create_task_group() as tg:
        tg.start_soon(injector.run, tui.pty)
        await inject(ref, injector, "a" * 250)
        await tui.until([b"a" * 100])
        await tui.until(looks=20)
        assert tui.pty.writes == [b"a" * 100]  # more now would reach Claude in one read: a paste
        tui.pty.unread = 0
        await tui.until([ENTER])
        confirm(ref, injector, "a" * 250)
        await tui.resumed()
        tg.cancel_scope.cancel()
    assert tui.pty.writes == [b"a" * 100, b"a" * 100, b"a" * 50, ENTER]


def pasting(times: int) -> Callable[[bytes], list[str] | None]:
    """A TUI that takes the first `times` typings as a paste, until its box is emptied."""
    left = [times]

    def react(data: bytes) -> list[str] | None:
        if data == CLEAR_BOX:
            return IDLE
        if data != ENTER and left[0] > 0:
            left[0] -= 1
            return PASTED
        return None

    return react


async def test_a_paste_placeholder_is_emptied_and_the_message_typed_again(ref: Run) -> None:
    tui = Tui(IDLE, pasting(1))
    await taken(ref, tui, "hello")
    assert tui.pty.writes == [b"hello", CLEAR_BOX, b"hello", ENTER]  # no Enter on the placeholder
    assert ref.get().pending_prompts() == []


async def test_a_message_holding_the_placeholder_s_text_is_typed_once(ref: Run) -> None:
    text = "what does [Pasted text #1] mean?"
    tui = Tui(IDLE, lambda data: [*IDLE[:2], f"❯ {text}", *IDLE[3:]] if data == text.encode() else None)
    await taken(ref, tui, text)
    assert tui.pty.writes == [text.encode(), ENTER]  # not emptied and typed again for its text


async def test_a_message_always_taken_as_a_paste_is_reported_and_stays_undelivered(ref: Run) -> None:
    tui = Tui(IDLE, pasting(1000))
    injector = Injector(ref, tui.screen, waits=FAST)
    notices = Notices(ref)
    async with anyio.create_task_group() as tg:
        tg.start_soon(injector.run, tui.pty)
        await inject(ref, injector, "hello")
        await notices.first()
        await tui.resumed()
        tg.cancel_scope.cancel()
    assert tui.pty.writes == [b"hello", CLEAR_BOX] * 3  # never submitted
    assert notices.texts == [
        "The message m-1 was not typed into Claude's TUI: Claude's TUI kept taking it as a paste "
        "(a `[Pasted text]` placeholder), so it was not sent."
    ]
    ref.get().deliver([user("hello", uuid="u-1")])  # the user typing the same text is not it
    assert [p.message_id for p in ref.get().pending_prompts()] == ["m-1"]
