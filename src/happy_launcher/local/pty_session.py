"""A child program under a PTY we own, its bytes pumped to and from our stdio by one thread.

The pump is a plain poll() loop in a dedicated thread, so throughput and keystroke latency do not
depend on how busy the event loop is. Bytes are never decoded: they pass through untouched.
The program runs as the foreground job of a small session leader (pty_leader.py), so that it can
stop itself on Ctrl-Z; "the child" below is that leader, which mirrors the program's stops and exit.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread

from happy_launcher.local.exits import ChildExit
from happy_launcher.local.pty_pump import ChildProcess, Inbox, Pump
from happy_launcher.local.pty_start import StartedPty, spawn_pty
from happy_launcher.terminal.guard import TermAttrs, terminal_size

_log = logging.getLogger(__name__)
_DRAIN_TIMEOUT = 1.0  # pause_input(): longest wait for the pump to write out the child's output


class Pty(Protocol):
    """What the TUI's front and the injector need of the PTY they drive: `PtySession`, or the
    fake beside it (`local/fake_pty.py`). The methods are `PtySession`'s."""

    def write_input(self, data: bytes) -> None: ...

    def input_unread(self) -> int: ...

    def resize(self, rows: int, cols: int) -> None: ...

    def size(self) -> tuple[int, int]: ...

    def send_signal(self, sig: int, *, foreground_group: bool = False) -> None: ...

    async def pause_input(self) -> None: ...

    def resume_input(self) -> None: ...

    async def wait_exit(self, seconds: float) -> bool: ...

    async def stop(self, grace: float = 3.0) -> None: ...


class PtySession:
    """Runs `argv` under a new PTY, wired to our stdin/stdout, until it exits.

    `on_output` sees every output chunk; it runs in the pump thread, so it must be quick and
    thread-safe (a failing callback is logged and dropped, never allowed to stall the terminal).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | os.PathLike[str],
        stdin_fd: int = 0,
        stdout_fd: int = 1,
        on_output: Callable[[bytes], None] | None = None,
        dimensions: tuple[int, int] | None = None,
        child_attrs: TermAttrs | None = None,
        cancel_grace: float = 3.0,
        started: StartedPty | None = None,
        on_ctrl_t: Callable[[], None] | None = None,
    ) -> None:
        """`dimensions` default to our terminal's size; `child_attrs` (the user's termios from
        before raw mode) are copied onto the child's PTY, as script(1) does, so that the erase
        character, IUTF8 and friends match the real terminal. `cancel_grace` is the stop() grace
        used when run() is cancelled. `started`: `argv` already runs (`start_pty`); run() takes
        it over instead of spawning. `on_ctrl_t`: the key is happy's (`Pump`), told on the loop."""
        if not argv:
            raise ValueError("argv must not be empty")
        self._argv = list(argv)
        self._env = dict(env)
        self._cwd = cwd
        self._stdin_fd = stdin_fd
        self._stdout_fd = stdout_fd
        self._on_output = on_output
        self._dimensions = dimensions
        self._child_attrs = child_attrs
        self._cancel_grace = cancel_grace
        self._started = started
        self._on_ctrl_t = on_ctrl_t
        self._inbox = Inbox()
        self._child: ChildProcess | None = None
        self._exited: anyio.Event | None = None
        self._stopped_by_us = False

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child is not None else None

    async def run(self, *, task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> ChildExit:
        """Spawn, report the pid via task_status.started(pid), pump until the child exits; return its exit."""
        if self._child is not None:
            raise RuntimeError("PtySession.run() can only be called once")
        self._exited = anyio.Event()
        child = self._child = self._spawn()
        try:
            task_status.started(child.pid)
            status = await self._pump_until_exit(child)
        finally:
            self._finish(child)
        code = os.waitstatus_to_exitcode(status)
        killed_by = -code if code < 0 else None
        return ChildExit(
            code=128 + killed_by if killed_by else code, signal=killed_by, stopped_by_us=self._stopped_by_us
        )

    def write_input(self, data: bytes) -> None:
        """Type `data` into the child (thread-safe; queued if the pump has not started yet)."""
        self._inbox.put(data)

    def input_unread(self) -> int:
        """Bytes of `write_input` the child has not read yet: still ours, or in its terminal's
        input queue (right after a write the kernel may not have queued it yet: then 0). 0 once
        the child has exited, or before it runs: nothing is there to read it."""
        if self._child is None or self._exited is None or self._exited.is_set():
            return 0
        return self._inbox.unwritten + self._child.input_queued()

    def resize(self, rows: int, cols: int) -> None:
        if self._child is None:
            self._dimensions = (rows, cols)
        else:
            self._child.resize(rows, cols)

    def size(self) -> tuple[int, int]:
        """(rows, cols) of the child's terminal now."""
        if self._child is None:
            return self._dimensions or terminal_size(self._stdout_fd, self._stdin_fd)
        cols, rows = os.get_terminal_size(self._child.fd)
        return rows, cols

    def send_signal(self, sig: int, *, foreground_group: bool = False) -> None:
        """Signal the child, or with `foreground_group` the job in its PTY's foreground (like ^C)."""
        if self._child is not None:
            self._child.signal(sig, foreground_group=foreground_group)

    def child_stopped(self) -> bool:
        """True if the child has stopped (e.g. Ctrl-Z) since the last call; call on SIGCHLD."""
        return self._child is not None and self._child.poll_stopped()

    def continue_child(self) -> None:
        self.send_signal(signal.SIGCONT)

    async def pause_input(self) -> None:
        """Stop reading our stdin, and return once the output the child wrote so far is on our
        stdout (or after a short timeout, e.g. if the pump has already ended)."""
        drained = anyio.Event()
        self._inbox.pause_input(True, functools.partial(_set_from_thread, drained))
        with anyio.move_on_after(_DRAIN_TIMEOUT):
            await drained.wait()

    def resume_input(self) -> None:
        self._inbox.pause_input(False)

    async def wait_exit(self, seconds: float) -> bool:
        """Wait up to `seconds` for the child to exit; True if it has (or never ran)."""
        exited = self._exited
        return exited is None or await _wait_for(exited, seconds)

    async def stop(self, grace: float = 3.0) -> None:
        """Ask the child to end (SIGHUP then SIGTERM), SIGKILL after `grace` seconds; marks stopped_by_us.

        Returns once the child has been reaped (immediately if it is not running).
        """
        child, exited = self._child, self._exited
        if child is None or exited is None or exited.is_set():
            return
        self._stopped_by_us = True
        # A hangup first, as when a terminal window closes (SIGCONT so a stopped child acts on it).
        child.signal(signal.SIGHUP)
        child.signal(signal.SIGCONT)
        if await _wait_for(exited, grace / 2):
            return
        child.signal(signal.SIGTERM)
        if await _wait_for(exited, grace / 2):
            return
        self._inbox.request_stop()
        child.kill()
        await exited.wait()

    def _spawn(self) -> ChildProcess:
        if self._started is not None:
            child = ChildProcess(*self._started.take())
        else:
            size = self._dimensions or terminal_size(self._stdout_fd, self._stdin_fd)
            pty = spawn_pty(self._argv, env=self._env, cwd=self._cwd, size=size, attrs=self._child_attrs)
            child = ChildProcess(*pty)
        # Non-blocking so the pump can never deadlock writing input to a child that is itself
        # blocked writing output we are not reading.
        os.set_blocking(child.fd, False)
        return child

    async def _pump_until_exit(self, child: ChildProcess) -> int:
        on_key = None if self._on_ctrl_t is None else functools.partial(_call_from_thread, self._on_ctrl_t)
        pump = Pump(child, self._inbox, self._stdin_fd, self._stdout_fd, self._on_output, on_key)
        try:
            return await anyio.to_thread.run_sync(self._pump_thread, pump, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            # Cancelled (e.g. a sibling task failed): end the child politely, and do not return
            # before the pump thread has finished with the fds.
            with anyio.CancelScope(shield=True):
                await self.stop(self._cancel_grace)
            raise

    def _pump_thread(self, pump: Pump) -> int:
        try:
            return pump.run()
        finally:
            exited = self._exited
            if exited is not None:
                # The loop is alive: run() and stop() wait for this event before returning.
                with contextlib.suppress(RuntimeError):
                    anyio.from_thread.run_sync(exited.set)

    def _finish(self, child: ChildProcess) -> None:
        if child.status is None:  # the pump failed with the child still there: never leave a zombie
            _log.warning("PTY pump ended before the child exited; killing pid %d", child.pid)
            child.kill()
            child.try_reap(block=True)
        child.close()
        if self._exited is not None:
            self._exited.set()


def _set_from_thread(event: anyio.Event) -> None:
    _call_from_thread(event.set)


def _call_from_thread(call: Callable[[], None]) -> None:
    with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody waits any more
        anyio.from_thread.run_sync(call)


async def _wait_for(event: anyio.Event, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        await event.wait()
    return event.is_set()
