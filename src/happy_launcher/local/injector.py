"""Inject mode: a message from a client typed into the live TUI, without a switch (issue 10,
switching-facts §4 and design (c)). For each message, in order:

1. Wait until no dialog is open: no permission request pending in the run's broker, no
   "Do you want to proceed?" on the screen, and the input box drawn (an Enter into a dialog
   answers it: measured, it approved a tool).
2. Hold the user's keystrokes (the PTY stops reading our stdin; they are typed afterwards).
3. A draft in the box is stashed (Ctrl-S), and given back by Claude after the submit. Ctrl-S is
   never sent to an empty box: with a stash held, it would restore it into the prompt.
4. Type the text (`tui_input.typing_chunks`), each write once Claude has read the one before;
   should the TUI still show a paste placeholder, empty the box and type it again, slower.
   Then Enter on its own.
5. Confirmed by the UserPromptSubmit hook carrying the text (it fires at once, also when the
   prompt is queued behind a running turn) within `InjectWaits.confirm`; else a service envelope says
   the message was not delivered (it stays stored and undelivered; it is not typed again in this
   run, since it may be in the box). The client's send reply came when the message was stored.

Exactly once: the ledger learns the injection by its text (`InboundLedger.expect_text`), armed
while the user's keys are held; the prompt's record then marks it delivered in the commit that
holds its user text, as for a sent message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import anyio

from happy_launcher.local.tui_input import (
    CHUNK_GAP,
    CLEAR_BOX,
    ENTER,
    PASTE_MARK,
    STASH,
    box_text,
    dialog_open,
    pasted,
    typing_chunks,
)
from happy_launcher.local.tui_screen import TuiScreen
from happy_launcher.session.inbound import InboundPrompt, prompt_key
from happy_launcher.session.launcher import Run

if TYPE_CHECKING:
    from happy_launcher.local.pty_session import Pty

_log = logging.getLogger(__name__)
_ATTEMPTS = 3  # typings of one message, while Claude's TUI takes them as a paste


@dataclass(frozen=True, slots=True)
class InjectWaits:
    """The injection's pace and patience, in seconds (tests make them tiny)."""

    poll: float = 0.03  # between looks at the screen while waiting on it
    chunk_gap: float = CHUNK_GAP  # between the writes that type a message
    chunk_gap_after_paste: float = 0.1  # the least, once writes were taken as a paste
    typed: float = 0.005  # between looks at whether Claude has read a write yet
    confirm: float = 5.0  # for UserPromptSubmit after Enter (measured 15-135 ms)
    box: float = 2.0  # for the box to change: redrawn, stashed, the draft back


class Injector:
    """Types messages into one run of the TUI, one at a time (`run` beside the TUI)."""

    def __init__(self, ref: Run, screen: TuiScreen, *, waits: InjectWaits = InjectWaits()) -> None:
        self._ref = ref
        self._screen = screen
        self._waits = waits
        self._send, self._receive = anyio.create_memory_object_stream[InboundPrompt](1000)
        self._queued: set[int] = set()  # seqs taken in hand in this run (never typed twice)
        self._awaited: tuple[str, anyio.Event] | None = None  # the prompt key UserPromptSubmit should bring

    def add(self, prompt: InboundPrompt) -> None:
        if prompt.seq not in self._queued:
            self._queued.add(prompt.seq)
            self._send.send_nowait(prompt)

    def prompt_submitted(self, prompt: str) -> None:
        """The UserPromptSubmit hook fired with this prompt."""
        if self._awaited is not None and self._awaited[0] == prompt_key(prompt):
            self._awaited[1].set()

    async def run(self, pty: Pty) -> None:
        async for prompt in self._receive:
            session = self._ref.get()
            if all(p.seq != prompt.seq for p in session.pending_prompts()):
                continue  # taken meanwhile (its record was read after a restart)
            if prompt.meta:
                session.mirror.notice(_keeps_its_own(prompt))
            try:
                problem = await self._inject(pty, prompt)
            except Exception as exc:  # never let a failed injection stop the TUI's run
                _log.exception("injecting message %s failed", prompt.message_id)
                problem = f"it failed ({exc})"
            if problem is not None:
                text = f"The message {prompt.message_id} was not typed into Claude's TUI: {problem}."
                _log.warning("%s", text)
                session.mirror.notice(text)

    async def _inject(self, pty: Pty, prompt: InboundPrompt) -> str | None:
        """Type one message; None once Claude took it, else what went wrong."""
        rows, cols = pty.size()
        self._screen.start(rows, cols)
        try:
            if not await self._redraw(pty, rows, cols):
                return "the TUI's input box could not be read on the screen"
            while True:
                await self._until(pty, lambda lines: _clear(self._ref, lines), None)
                await pty.pause_input()
                lines = self._lines(pty)
                if _clear(self._ref, lines):
                    break
                pty.resume_input()  # a dialog opened meanwhile: wait again
            try:
                return await self._type(pty, prompt, box_text(lines) or "")
            finally:
                pty.resume_input()
        finally:
            self._screen.stop()

    async def _type(self, pty: Pty, prompt: InboundPrompt, draft: str) -> str | None:
        if draft:
            pty.write_input(STASH)
            if not await self._until(pty, lambda lines: box_text(lines) == "", self._waits.box):
                return "the user's draft could not be stashed (Ctrl-S)"
        ledger = self._ref.get().inbound
        ledger.expect_text(prompt.text, prompt.seq)
        submitted = anyio.Event()
        self._awaited = (prompt_key(prompt.text), submitted)
        try:
            problem = await self._type_text(pty, prompt.text)
            if problem is None:
                pty.write_input(ENTER)
                with anyio.move_on_after(self._waits.confirm):
                    await submitted.wait()
                if not submitted.is_set():
                    problem = f"Claude did not take it as a prompt within {self._waits.confirm:g} s"
        finally:
            self._awaited = None
        if draft:  # the user types on once the draft is back in the box
            await self._until(pty, lambda lines: bool(box_text(lines)), self._waits.box)
        if problem is not None:
            ledger.forget_text(prompt.seq)
        return problem

    async def _type_text(self, pty: Pty, text: str) -> str | None:
        """Type `text` into the empty box, each write once Claude has read the one before (if
        writes bunch up, e.g. while the machine is busy, Claude reads them as a paste: a
        `[Pasted text #N]` placeholder, and a prompt wrapped in `<pasted_content>`). Should a
        placeholder show anyway, the box is emptied and typed again, slower. None: typed."""
        gap = self._waits.chunk_gap
        for _attempt in range(_ATTEMPTS):
            drawn = self._screen.outputs
            for chunk in typing_chunks(text):
                drawn = self._screen.outputs
                pty.write_input(chunk)
                await anyio.sleep(gap)
                await self._read_by_claude(pty)
            # Once Claude drew its last read, a placeholder from any of them shows.
            await self._until(pty, partial(self._drawn_since, drawn), self._waits.box)
            # A message holding the placeholder's own text cannot be told from one: taken as typed.
            if PASTE_MARK in text or not pasted(self._lines(pty)):
                return None
            pty.write_input(CLEAR_BOX)
            if not await self._until(pty, lambda lines: box_text(lines) == "", self._waits.box):
                break
            gap = max(gap * 2, self._waits.chunk_gap_after_paste)
        return "Claude's TUI kept taking it as a paste (a `[Pasted text]` placeholder), so it was not sent"

    def _drawn_since(self, count: int, _lines: list[str]) -> bool:
        return self._screen.outputs > count

    async def _read_by_claude(self, pty: Pty) -> None:
        """Until Claude has read what was typed; a stalled TUI is waited for `waits.box` at most."""
        with anyio.move_on_after(self._waits.box):
            while pty.input_unread():  # noqa: ASYNC110 (the kernel's queue: nothing to wait on)
                await anyio.sleep(self._waits.typed)

    async def _redraw(self, pty: Pty, rows: int, cols: int) -> bool:
        """Have Claude draw its screen whole (it does on a size change): one column less, then
        back, each time until the box (or a dialog) shows."""
        pty.resize(rows, max(cols - 1, 1))
        drawn = await self._until(pty, _drawn, self._waits.box)
        pty.resize(rows, cols)
        return await self._until(pty, _drawn, self._waits.box) or drawn

    async def _until(self, pty: Pty, cond: Callable[[list[str]], bool], seconds: float | None) -> bool:
        with anyio.move_on_after(seconds if seconds is not None else float("inf")):
            # Polled: the screen's bytes come from the pump thread, and are emulated in batches.
            while not cond(self._lines(pty)):  # noqa: ASYNC110
                await anyio.sleep(self._waits.poll)
            return True
        return False

    def _lines(self, pty: Pty) -> list[str]:
        rows, cols = pty.size()
        return self._screen.lines(rows, cols)


def _keeps_its_own(prompt: InboundPrompt) -> str:
    """The service line for a message that asks for a permission mode or a model: only remote
    mode applies them (an SDK call); typing cannot."""
    meta = prompt.meta
    asked = [f"permission mode {meta.permission_mode}"] if meta.permission_mode else []
    asked += [f"model {meta.model}"] if meta.model else []
    return (
        f"The message {prompt.message_id} asks for {' and '.join(asked)}: Claude's TUI keeps its own "
        "permission mode and model, so it is typed as it is."
    )


def _drawn(lines: list[str]) -> bool:
    return box_text(lines) is not None or dialog_open(lines)


def _clear(ref: Run, lines: list[str]) -> bool:
    """Nothing would take an Enter but the input box."""
    return not ref.permissions.pending and not dialog_open(lines) and box_text(lines) is not None
