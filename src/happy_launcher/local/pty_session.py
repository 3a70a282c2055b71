"""A child program under a PTY we own, its bytes pumped to and from our stdio by one thread.

The pump is a plain poll() loop in a dedicated thread, so throughput and keystroke latency do not
depend on how busy the event loop is. Bytes are never decoded: they pass through untouched.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import pathlib
import shutil
import signal
import termios
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread
from ptyprocess import PtyProcess

from happy_launcher.local.pty_pump import ChildProcess, Inbox, Pump
from happy_launcher.local.terminal import TermAttrs, terminal_size

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChildExit:
    code: int  # shell-style: exit status, or 128+signal if killed by a signal
    signal: int | None  # the signal that killed it, if any
    stopped_by_us: bool  # True when we terminated it (stop()/signal forwarding of SIGTERM/SIGHUP)


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
    ) -> None:
        """`dimensions` default to our terminal's size; `child_attrs` (the user's termios from
        before raw mode) are copied onto the child's PTY, as script(1) does, so that the erase
        character, IUTF8 and friends match the real terminal. `cancel_grace` is the stop() grace
        used when run() is cancelled."""
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

    def resize(self, rows: int, cols: int) -> None:
        if self._child is None:
            self._dimensions = (rows, cols)
        else:
            self._child.resize(rows, cols)

    def send_signal(self, sig: int, *, foreground_group: bool = False) -> None:
        """Signal the child, or with `foreground_group` the job in its PTY's foreground (like ^C)."""
        if self._child is not None:
            self._child.signal(sig, foreground_group=foreground_group)

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
        child.signal(signal.SIGKILL)
        await exited.wait()

    def _spawn(self) -> ChildProcess:
        rows, cols = self._dimensions or terminal_size(self._stdout_fd, self._stdin_fd)
        argv = [_resolve_command(self._argv[0], self._env, self._cwd), *self._argv[1:]]
        proc = PtyProcess.spawn(
            argv,
            env=self._env,
            dimensions=(rows, cols),
            preexec_fn=functools.partial(_prepare_child, os.fspath(self._cwd), self._child_attrs),
        )
        # Non-blocking so the pump can never deadlock writing input to a child that is itself
        # blocked writing output we are not reading.
        os.set_blocking(proc.fd, False)
        return ChildProcess(proc)

    async def _pump_until_exit(self, child: ChildProcess) -> int:
        pump = Pump(child, self._inbox, self._stdin_fd, self._stdout_fd, self._on_output)
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
            child.signal(signal.SIGKILL)
            child.try_reap(block=True)
        child.close()
        if self._exited is not None:
            self._exited.set()


async def _wait_for(event: anyio.Event, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        await event.wait()
    return event.is_set()


def _resolve_command(command: str, env: Mapping[str, str], cwd: str | os.PathLike[str]) -> str:
    # Resolve against the child's PATH and cwd (ptyprocess would use ours).
    if os.sep in command:
        return str(pathlib.Path(cwd, command))
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "command not found", command)
    return found


def _prepare_child(cwd: str, attrs: TermAttrs | None) -> None:
    """Runs in the forked child, just before exec.

    The chdir is done here rather than by ptyprocess, which would let a bad cwd raise inside the
    forked copy of this program; errors raised here are reported to the parent by spawn()."""
    os.chdir(cwd)
    # Python ignores SIGPIPE and SIGXFSZ, and ignored dispositions survive exec: restore the
    # defaults a shell would have given the program.
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    if attrs is not None:
        termios.tcsetattr(0, termios.TCSANOW, attrs)
