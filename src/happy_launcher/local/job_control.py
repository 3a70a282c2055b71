"""Ctrl-Z under our PTY: when the child stops, we stop too, as one shell job.

Claude suspends itself on Ctrl-Z (its raw-mode TUI sees the key, not the terminal), and the PTY's
session leader (pty_leader.py) stops with it, which we see on SIGCHLD. We then give
the user's terminal back (modes reset, termios restored) and stop our own process group with
SIGTSTP, so the shell reports the job stopped and shows its prompt. `fg` continues us (SIGCONT):
raw mode again, the child's window resized to the terminal's current size, the child continued.
Continued in the background (`bg`), we stop again, as a TUI that needs the terminal does.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Protocol

import anyio

from happy_launcher.terminal.guard import TerminalGuard, terminal_size

_log = logging.getLogger(__name__)
_RESTOP_DELAY = 0.2  # seconds: see JobControl.stop_again


class Child(Protocol):
    """What job control needs of the PTY session (`PtySession`)."""

    async def pause_input(self) -> None: ...

    def resume_input(self) -> None: ...

    def resize(self, rows: int, cols: int) -> None: ...

    def continue_child(self) -> None: ...


class Terminal(Protocol):
    """The user's terminal: `TerminalGuard` plus foreground checks (`UserTerminal`)."""

    def restore(self) -> None: ...

    def reacquire(self) -> None: ...

    def size(self) -> tuple[int, int]: ...

    def in_foreground(self) -> bool: ...

    def stop_job(self) -> None:
        """Stop our process group; returns once it is continued."""


class UserTerminal:
    """The real `Terminal`: our stdin/stdout and our own process group."""

    def __init__(self, guard: TerminalGuard, stdin_fd: int, stdout_fd: int) -> None:
        self._guard = guard
        self._fds = (stdout_fd, stdin_fd)
        self._tty = next((fd for fd in (stdin_fd, stdout_fd) if os.isatty(fd)), None)

    def restore(self) -> None:
        self._guard.restore()

    def reacquire(self) -> None:
        self._guard.reacquire()

    def size(self) -> tuple[int, int]:
        return terminal_size(*self._fds)

    def in_foreground(self) -> bool:
        if self._tty is None:
            return True
        try:
            return os.tcgetpgrp(self._tty) == os.getpgrp()
        except OSError:  # the terminal is gone: nothing to wait for (SIGHUP follows)
            return True

    def stop_job(self) -> None:
        # SIGTSTP keeps its default action in happy, so this stops every thread of ours and the
        # rest of our job (a pipeline) until SIGCONT. Without a job-control shell our group is
        # orphaned: the kernel discards the signal and we simply go on.
        os.killpg(os.getpgrp(), signal.SIGTSTP)


class JobControl:
    """Follows the child's stops and our continues (SIGCHLD/SIGCONT, from the signal relay)."""

    def __init__(self, child: Child, terminal: Terminal) -> None:
        self._child = child
        self._terminal = terminal
        self._suspended = False
        self._restop_pending = False
        self._ending = anyio.Event()

    def end(self) -> None:
        """We are ending the child: never stop again from now on."""
        self._ending.set()

    async def child_stopped(self) -> None:
        """The child stopped itself: give the terminal back and stop; resume if continued in front."""
        if self._suspended or self._ending.is_set():
            return
        self._suspended = True
        _log.info("the child stopped: suspending")
        await self._child.pause_input()  # its last output (mode resets, a message) goes out first
        self._terminal.restore()
        self._terminal.stop_job()
        self._resume_if_in_front()

    def continued(self) -> bool:
        """We got SIGCONT: resume if we are in the foreground. True if we are left suspended in the
        background (`bg`, or `kill %1`): the caller then runs `stop_again` in a task."""
        if self._resume_if_in_front() or not self._suspended or self._restop_pending:
            return False
        self._restop_pending = True
        return True

    async def stop_again(self) -> None:
        """Suspended in the background: stop again, as a TUI that needs its terminal does (reading
        it would stop us anyway). Not at once: `kill %1` sends SIGCONT before SIGTERM, and a job
        stopped again before the SIGTERM arrives would stay stopped with it pending."""
        with anyio.move_on_after(_RESTOP_DELAY):
            await self._ending.wait()
        self._restop_pending = False
        if not self._suspended or self._ending.is_set() or self._resume_if_in_front():
            return
        self._terminal.stop_job()
        self._resume_if_in_front()

    def _resume_if_in_front(self) -> bool:
        if not self._terminal.in_foreground():
            return False
        # Also after a stop that was not ours (SIGSTOP): the shell has put its own settings back.
        self._terminal.reacquire()
        self._child.resize(*self._terminal.size())
        if self._suspended:
            self._suspended = False
            _log.info("continued in the foreground: resuming the child")
            self._child.resume_input()
            self._child.continue_child()
        return True
