"""The signals of a `happy claude` run (issue 16 §2): one receiver from the run's start to its
end, whichever launcher runs, and between two launchers too. anyio's receivers do not nest (the
inner one, closing, restores the default disposition), so launchers open none of their own.

A launcher part that passes signals on to Claude (the TUI's relay, the remote screen) `listen`s
while it can. An ending signal (SIGTERM, SIGHUP, SIGINT, SIGQUIT) is recorded (`ended_by`)
whoever listens; when no part would act on it (a launcher starting, or stopping for a switch),
the running launcher is cancelled. Either way the session loop then ends the run: no switch,
the session ended `cancelled`, happy's exit code 128 + the signal."""

from __future__ import annotations

import math
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectSendStream

from happy_launcher.terminal.guard import SignalReceiver

ENDING = frozenset({signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT})
# What any launcher acts on: being ended, the window size, job control (the TUI's Ctrl-Z).
CAUGHT = (*sorted(ENDING), signal.SIGWINCH, signal.SIGCHLD, signal.SIGCONT)


@dataclass(frozen=True, slots=True)
class _Listener:
    signals: frozenset[int]
    send: MemoryObjectSendStream[signal.Signals]


class RunSignals:
    """`serve` catches CAUGHT until cancelled; `running` goes around each launcher's run, and
    `listen` is what its parts open instead of `anyio.open_signal_receiver`."""

    def __init__(self, receiver: SignalReceiver = anyio.open_signal_receiver) -> None:
        self._receiver = receiver
        self.ended_by: int | None = None  # the first ending signal
        self._listener: _Listener | None = None
        self._launcher: anyio.CancelScope | None = None

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with self._receiver(*CAUGHT) as signals:
            task_status.started()
            async for sig in signals:
                self._arrived(sig)

    def _arrived(self, sig: signal.Signals) -> None:
        ending = sig in ENDING
        if ending and self.ended_by is None:
            self.ended_by = sig
        listener = self._listener
        if listener is not None and sig in listener.signals:
            listener.send.send_nowait(sig)
        elif ending and self._launcher is not None:
            self._launcher.cancel()

    @contextmanager
    def listen(self, *signals: signal.Signals) -> Iterator[AsyncIterator[signal.Signals]]:
        """`signals` (of CAUGHT) as they arrive, until the block ends; one listener at a time."""
        send, receive = anyio.create_memory_object_stream[signal.Signals](math.inf)
        listener = self._listener = _Listener(frozenset(signals), send)
        try:
            with send, receive:
                yield receive
        finally:
            if self._listener is listener:
                self._listener = None

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around one launcher's run: left early (cancelled) when an ending signal finds no
        listener, at once if one came before."""
        with anyio.CancelScope() as scope:
            self._launcher = scope
            if self.ended_by is not None:
                scope.cancel()
            try:
                yield
            finally:
                self._launcher = None
