"""Local mode as the controller sees it: the TUI under our PTY, which a switch request stops
cleanly so that remote mode can resume the same Claude session (switching-facts §1-§3).

The hand-over: if a turn runs, Esc (as the user would) and wait until Claude has written the
interrupt record, which closes the turn `cancelled`; then SIGTERM, which Claude handles cleanly
in about 330 ms (SIGKILL would lose records, `/exit` is slower and lands in a half-typed draft).
The SDK is never started before the TUI is gone: a TUI turn after the SDK loaded the history
would fork the session (facts §2)."""

from __future__ import annotations

import logging
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from happy_launcher.local.injector import Injector
from happy_launcher.local.tui_screen import TuiScreen
from happy_launcher.protocol import Envelope
from happy_launcher.session.launcher import Run
from happy_launcher.session.ports import ControlRefused, Mode

if TYPE_CHECKING:
    from happy_launcher.local.pty_session import Pty

_log = logging.getLogger(__name__)
ESC = b"\x1b"


@dataclass(frozen=True, slots=True)
class StopWaits:
    """How long a switch waits, in seconds (tests make them tiny)."""

    interrupt: float = 5.0  # for the interrupt record after Esc (measured 173-396 ms)
    term: float = 3.0  # for Claude to exit on SIGTERM (measured 310-530 ms), then it is killed


def turn_open(ref: Run) -> bool:
    """A turn runs in the session (as far as the mirror has seen); never opens the session."""
    session = ref.opened
    return session is not None and session.id is not None and session.mirror.turn is not None


class _Local:
    """What both local fronts are: Claude run by happy, busy while the mirror has a turn open."""

    def __init__(self, ref: Run) -> None:
        self._ref = ref

    @property
    def mode(self) -> Mode:
        return "local"

    @property
    def busy(self) -> bool:
        return turn_open(self._ref)


class LocalFront(_Local):
    """Serves switch, abort and inject requests for one run of the TUI (`serve(pty)` beside it);
    `screen` follows the TUI's output (for inject mode)."""

    def __init__(self, ref: Run, screen: TuiScreen, *, waits: StopWaits = StopWaits()) -> None:
        super().__init__(ref)
        self._switch = anyio.Event()
        self._pty: Pty | None = None
        self._waits = waits
        self._injector = Injector(ref, screen)
        self.switched = False  # the TUI was stopped for a switch (not by the user)

    def check_inbound(self) -> None:
        pass  # taken: delivered through remote mode

    def request_switch(self) -> None:
        self._switch.set()

    def inbound(self) -> None:
        """Messages wait: typed into the TUI if all of them are to be injected; else through
        remote mode (a switch), which sends them all in order."""
        pending = self._ref.get().pending_prompts()
        if not all(prompt.inject for prompt in pending):
            self.request_switch()
            return
        for prompt in pending:
            self._injector.add(prompt)

    def prompt_submitted(self, prompt: str) -> None:
        """Claude's UserPromptSubmit hook fired (from the tracker)."""
        self._injector.prompt_submitted(prompt)

    async def abort(self) -> None:
        if self._pty is not None and self.busy:
            self._pty.write_input(ESC)

    async def serve(self, pty: Pty) -> None:
        """Until Claude exits: on a switch request, stop it as described above. Messages that
        wait for Claude (sent while happy was down, or during a switch) ask for one at once."""
        self._pty = pty
        try:
            session = self._ref.get()
        except Exception:  # the session could not be opened: said by the tracking, Claude goes on
            await anyio.sleep_forever()
        session.when_bound(lambda: self.inbound() if session.has_pending() else None)
        detach = self._ref.local_permissions.attach(session)  # the TUI's permission requests
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._injector.run, pty)
                await self._switch.wait()
                tg.cancel_scope.cancel()
            await self._stop_for_switch(pty)
        finally:
            detach()

    async def _stop_for_switch(self, pty: Pty) -> None:
        if self.busy:
            pty.write_input(ESC)
            if not await self._turn_ended(self._waits.interrupt):
                _log.warning("Claude did not end the interrupted turn within %s s", self._waits.interrupt)
        self.switched = True
        pty.send_signal(signal.SIGTERM)
        if not await pty.wait_exit(self._waits.term):
            await pty.stop()

    async def _turn_ended(self, seconds: float) -> bool:
        session = self._ref.get()
        ended = anyio.Event()

        class _Watch:
            def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
                if session.mirror.turn is None:
                    ended.set()

        unsubscribe = session.subscribe(_Watch())
        try:
            with anyio.move_on_after(seconds):
                if session.mirror.turn is not None:
                    await ended.wait()
        finally:
            unsubscribe()
        return session.mirror.turn is None


class WatchOnlyFront(_Local):
    """Claude on happy's own stdio (no terminal, or `-p`): it reads nothing but our stdin, so
    the session can be watched but takes no messages and cannot switch."""

    def check_inbound(self) -> None:
        raise ControlRefused(_WATCH_ONLY)

    def request_switch(self) -> None:
        raise ControlRefused(_WATCH_ONLY)

    async def abort(self) -> None:
        raise ControlRefused(_WATCH_ONLY)

    def inbound(self) -> None:
        raise ControlRefused(_WATCH_ONLY)


_WATCH_ONLY = (
    "this session runs Claude without a terminal (or with -p): it can be watched, but it takes "
    "no messages and cannot switch; run `happy claude --resume <id>` in a terminal to drive it"
)
