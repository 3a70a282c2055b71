"""The remote-mode screen: the terminal's view of a session Claude runs through the Agent SDK.

While happy drives Claude through the SDK ("remote mode") and stdin/stdout are a terminal, the
remote launcher hands the terminal to a `RemoteScreen`: it feeds it the session's envelopes,
streamed text, permission requests and status, and the screen asks the session, through
`ScreenActions`, to send what the user types, interrupt a turn, or answer a permission request.

How the screen draws. No alternate screen: a full-screen redraw flickers and loses the history
when happy exits. Instead a rich `Live` region at the bottom of the terminal is redrawn in place
(what is still running, the streamed preview, the turn's progress, the permission prompt, the
input line, key hints, the status line), and everything finished is printed above it, once, into
the terminal's own scrollback. The live region is bounded by the terminal's height.

The parts: screen_model (envelopes -> lines), screen_keys (bytes -> keys -> commands) and
screen_view (the live region's layout) are sans-IO and unit-tested; screen_render draws lines
with rich; this module owns the terminal (raw mode through terminal/guard.py's `TerminalGuard`,
restored on every exit path) and runs the keyboard, signals, actions and redraws.

Keys: Enter sends the input line (Backspace, Ctrl-U, Ctrl-W edit it; a bracketed paste may hold
several lines); y / n / a answer the oldest permission prompt (allow / deny / deny and stop);
Ctrl-C interrupts a running turn, else clears the input line, else exits when pressed twice
within 3 s; Ctrl-D on an empty line exits while idle; Ctrl-T asks for local mode.
"""

from __future__ import annotations

import logging
import math
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from happy_launcher.protocol import Clock, Envelope, wall_clock_ms
from happy_launcher.remote.screen_keys import Answer, Command, End, Interrupt, KeyController, KeyDecoder, Send
from happy_launcher.remote.screen_model import Transcript
from happy_launcher.remote.screen_render import Renderer, TerminalOutput
from happy_launcher.remote.screen_types import (
    ScreenActions,
    ScreenEnd,
    StatusInfo,
)
from happy_launcher.remote.screen_view import SPIN_MS, compose, describe
from happy_launcher.session.ports import PermissionRequest
from happy_launcher.terminal.guard import SignalReceiver, TerminalGuard, terminal_size

__all__ = ["RemoteScreen", "ScreenActions", "ScreenEnd", "StatusInfo"]

_log = logging.getLogger(__name__)

_SIGNALS = (signal.SIGWINCH, signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
_FRAME = 1 / 30  # seconds: redraws are coalesced to at most this rate (a stream of deltas)
_READ_SIZE = 4096

_Action = Callable[[], Awaitable[None]]


class RemoteScreen:
    """Owns the terminal while `run()` runs. The `on_*` methods, `set_status` and `close` are
    called from the same event loop; they may be called before `run()` (what they add is drawn
    when it starts) and after it (they do nothing visible). `signals`: where the signals that
    end it come from (the run's, in `happy claude`)."""

    def __init__(
        self,
        actions: ScreenActions,
        *,
        status: StatusInfo,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
        clock: Clock = wall_clock_ms,
        signals: SignalReceiver = anyio.open_signal_receiver,
    ) -> None:
        self._actions = actions
        self._signals = signals
        self._status = status
        self._stdin_fd = stdin_fd
        self._stdout_fd = stdout_fd
        self._clock = clock
        self._transcript = Transcript()
        self._keys = KeyController()
        self._decoder = KeyDecoder()
        self._wake: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self._end: ScreenEnd | None = None

    # -- fed by the session ------------------------------------------------------------------------

    def on_envelopes(self, envelopes: Sequence[Envelope]) -> None:
        self._transcript.apply(envelopes)
        self._changed()

    def on_partial(self, text: str) -> None:
        """A text delta of the main thread, previewed until its full `text` envelope arrives."""
        self._transcript.partial(text)
        self._changed()

    def on_permission(self, prompt: PermissionRequest) -> None:
        self._keys.add_prompt(prompt)
        self._changed()

    def on_permission_done(self, request_id: str) -> None:
        """The request was answered elsewhere (another client, a timeout): stop asking."""
        self._keys.drop_prompt(request_id)
        self._changed()

    def set_status(self, status: StatusInfo) -> None:
        self._status = status
        self._changed()

    def close(self) -> None:
        """End `run()` (it returns `ScreenEnd("closed")`), e.g. when the session switches away."""
        self._finish(ScreenEnd("closed"))

    # -- the terminal ------------------------------------------------------------------------------

    async def run(self) -> ScreenEnd:
        """Draw the session and read the keyboard until the user leaves, `close()` is called or a
        signal ends us; the terminal is then as it was before, whatever happened."""
        if self._end is not None:
            return self._end
        if not (os.isatty(self._stdin_fd) and os.isatty(self._stdout_fd)):
            # The launcher shows this screen only on a terminal; without one there is no one to see it.
            raise ValueError("the remote screen needs a terminal on stdin and stdout")
        # Signals are caught before the terminal goes raw, so none can kill us with it left raw.
        with (
            self._signals(*_SIGNALS) as signals,
            TerminalGuard(self._stdin_fd, self._stdout_fd) as guard,
        ):
            rows, cols = self._size()
            renderer = Renderer(TerminalOutput(self._stdout_fd, guard.observe), rows=rows, cols=cols)
            # Sends and answers go to the session one at a time, in the order they were made.
            queue_in, queue_out = anyio.create_memory_object_stream[_Action](math.inf)
            with renderer, queue_in, queue_out:
                try:
                    async with anyio.create_task_group() as tg:
                        self._scope = tg.cancel_scope
                        if self._end is not None:  # close() came while we set up
                            tg.cancel_scope.cancel()
                        tg.start_soon(self._watch_signals, signals, renderer)
                        tg.start_soon(self._perform, queue_out)
                        tg.start_soon(self._read_keys, queue_in, tg)
                        tg.start_soon(self._draw_loop, renderer)
                finally:
                    self._scope = None
                self._draw(renderer)  # what came in since the last frame reaches the scrollback
        return self._end or ScreenEnd("closed")

    def _size(self) -> tuple[int, int]:
        return terminal_size(self._stdout_fd, self._stdin_fd)

    def _finish(self, end: ScreenEnd) -> None:
        if self._end is None:
            self._end = end
        if self._scope is not None:
            self._scope.cancel()

    def _changed(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _watch_signals(self, signals: AsyncIterator[signal.Signals], renderer: Renderer) -> None:
        async for sig in signals:
            if sig == signal.SIGWINCH:
                renderer.resize(*self._size())
                self._changed()
            else:
                self._finish(ScreenEnd("signal", int(sig)))

    async def _draw_loop(self, renderer: Renderer) -> None:
        while True:
            self._wake = anyio.Event()
            self._draw(renderer)
            drawn = anyio.current_time()
            with anyio.move_on_after(self._next_tick()):
                await self._wake.wait()
            await anyio.sleep(max(0.0, drawn + _FRAME - anyio.current_time()))

    def _draw(self, renderer: Renderer) -> None:
        now = self._clock()
        live = compose(self._transcript, self._keys, self._status, now=now, rows=renderer.rows)
        renderer.draw(self._transcript.take_committed(), live)

    def _next_tick(self) -> float:
        """Seconds until the screen changes by itself (spinner, elapsed time, the exit hint)."""
        if self._transcript.turn is not None:
            return SPIN_MS / 1000
        until = self._keys.exit_armed_for(self._clock())
        return math.inf if until is None else until / 1000

    async def _read_keys(self, queue: MemoryObjectSendStream[_Action], tg: anyio.abc.TaskGroup) -> None:
        while True:
            await anyio.wait_readable(self._stdin_fd)
            try:
                data = os.read(self._stdin_fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:  # EIO: the terminal hung up (SIGHUP is on its way)
                data = b""
            if not data:
                self._finish(ScreenEnd("hangup"))
                return
            for key in self._decoder.feed(data):
                command = self._keys.feed(key, now=self._clock(), turn=self._transcript.turn)
                if command is not None:
                    self._command(command, queue, tg)
            self._changed()

    def _command(
        self, command: Command, queue: MemoryObjectSendStream[_Action], tg: anyio.abc.TaskGroup
    ) -> None:
        actions = self._actions
        if isinstance(command, End):
            self._finish(ScreenEnd(command.reason))
        elif isinstance(command, Interrupt):
            tg.start_soon(self._attempt, "interrupt", actions.interrupt)  # never behind a slow send
        elif isinstance(command, Send):
            text = command.text
            queue.send_nowait(lambda: self._attempt("send", lambda: actions.send(text)))
        elif isinstance(command, Answer):
            self._answered(command, queue)

    def _answered(self, answer: Answer, queue: MemoryObjectSendStream[_Action]) -> None:
        prompt = answer.prompt
        verdict = "Allowed" if answer.allow else "Denied and stopped" if answer.stop else "Denied"
        self._transcript.answered(f"{verdict} {prompt.tool}: {describe(prompt)}", allowed=answer.allow)

        async def call() -> None:
            await self._actions.answer_permission(prompt.id, answer.allow, stop=answer.stop)

        queue.send_nowait(lambda: self._attempt("answer", call))

    async def _perform(self, queue: MemoryObjectReceiveStream[_Action]) -> None:
        async for action in queue:
            await action()

    async def _attempt(self, what: str, action: _Action) -> None:
        try:
            await action()
        except Exception as exc:  # the session's failure: show it, keep the screen up
            _log.exception("remote screen: %s failed", what)
            self._transcript.notice(f"Could not {what}: {exc}")
            self._changed()
