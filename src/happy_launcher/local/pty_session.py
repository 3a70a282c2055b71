"""A child program under a PTY we own, its bytes pumped to and from our stdio by one thread.

The pump is a plain poll() loop in a dedicated thread, so throughput and keystroke latency do not
depend on how busy the event loop is. Bytes are never decoded: they pass through untouched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import logging
import os
import pathlib
import select
import shutil
import signal
import struct
import termios
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread
from ptyprocess import PtyProcess

from happy_launcher.local.terminal import TermAttrs, terminal_size, write_all

_log = logging.getLogger(__name__)

_READ_SIZE = 1 << 16
_INPUT_HIGH_WATER = 1 << 20  # stop reading stdin while this much input still waits for the child
_DRAIN_IDLE_MS = 50  # once the child is reaped, this much output silence means we have it all
_DRAIN_MAX_S = 1.0  # ... and a grandchild still writing to the PTY cannot keep us running
_REAP_POLL_MS = 100  # exit polling interval where pidfd_open is unavailable
_READABLE = select.POLLIN | select.POLLHUP | select.POLLERR | select.POLLNVAL


@dataclass(frozen=True)
class ChildExit:
    code: int  # shell-style: exit status, or 128+signal if killed by a signal
    signal: int | None  # the signal that killed it, if any
    stopped_by_us: bool  # True when we terminated it (stop()/signal forwarding of SIGTERM/SIGHUP)


class ChildProcess:
    """The spawned process and its PTY master fd.

    One lock serialises reaping, signalling, ioctls and closing, so a signal never reaches a
    recycled pid and an ioctl never hits a closed (possibly reused) fd number.
    """

    def __init__(self, proc: PtyProcess) -> None:
        self._proc = proc
        self.pid: int = proc.pid
        self.fd: int = proc.fd
        self.status: int | None = None  # raw wait status once reaped
        self._lock = threading.Lock()
        self._closed = False

    def try_reap(self, *, block: bool = False) -> bool:
        with self._lock:
            if self.status is None:
                try:
                    pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
                except ChildProcessError:  # reaped behind our back: the real status is lost
                    pid, status = self.pid, 255 << 8
                if pid:
                    self.status = status
            return self.status is not None

    def signal(self, sig: int, *, foreground_group: bool = False) -> None:
        with self._lock:
            if self.status is not None:
                return
            target = self.pid
            if foreground_group and not self._closed:
                # What a terminal does for ^C: signal whichever job is in the PTY's foreground.
                with contextlib.suppress(OSError):
                    target = -os.tcgetpgrp(self.fd) or self.pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, sig)

    def resize(self, rows: int, cols: int) -> None:
        with self._lock:
            if not self._closed:
                # The kernel sends SIGWINCH to the PTY's foreground process group itself.
                with contextlib.suppress(OSError):
                    fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                # Close through ptyprocess's file object and mark it closed, so that its __del__
                # neither closes a reused fd number later nor sleeps and kills in close().
                self._proc.fileobj.close()
                self._proc.closed = True


class Inbox:
    """Thread-safe mailbox into the pump thread: input for the child and a stop request, plus
    the self-pipe that wakes the pump's poll()."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data = bytearray()
        self.stop_requested = False
        self._wake_fd: int | None = None

    def put(self, data: bytes) -> None:
        with self._lock:
            self._data += data
            self._wake()

    def request_stop(self) -> None:
        with self._lock:
            self.stop_requested = True
            self._wake()

    def take(self) -> bytes:
        with self._lock:
            data = bytes(self._data)
            self._data.clear()
            return data

    def attach(self, wake_fd: int | None) -> None:
        # Swapped under the lock so put() never writes to a pipe fd after the pump closed it.
        with self._lock:
            self._wake_fd = wake_fd
            if wake_fd is not None and (self._data or self.stop_requested):
                self._wake()

    def _wake(self) -> None:
        if self._wake_fd is not None:
            with contextlib.suppress(BlockingIOError):  # a full pipe is already a pending wake-up
                os.write(self._wake_fd, b"\0")


class Pump:
    """One poll() loop moving child output to stdout and stdin/`Inbox` input to the child.

    `run` returns the child's wait status once the child is reaped and its output drained.
    """

    def __init__(
        self,
        child: ChildProcess,
        inbox: Inbox,
        stdin_fd: int,
        stdout_fd: int,
        on_output: Callable[[bytes], None] | None,
    ) -> None:
        self._child, self._inbox = child, inbox
        self._stdin_fd, self._stdout_fd = stdin_fd, stdout_fd
        self._on_output = on_output
        self._to_child = bytearray()
        self._master_open = True
        self._stdin_open = stdin_fd >= 0
        self._stdout_ok = True
        self._poller = select.poll()
        self._interest: dict[int, int] = {}

    def run(self) -> int:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        pidfd = _open_pidfd(self._child.pid)
        self._inbox.attach(wake_w)
        try:
            self._set_interest(wake_r, select.POLLIN)
            if pidfd is not None:
                self._set_interest(pidfd, select.POLLIN)
            self._loop(wake_r, pidfd)
        finally:
            self._inbox.attach(None)
            for fd in (wake_r, wake_w, pidfd):
                if fd is not None:
                    os.close(fd)
        if self._child.status is None:  # unreachable: _loop returns only once the child is reaped
            raise RuntimeError("pump ended before the child was reaped")
        return self._child.status

    def _loop(self, wake_r: int, pidfd: int | None) -> None:
        master, reaped_at, next_check = self._child.fd, 0.0, 0.0
        while True:
            self._update_interest()
            if self._child.status is not None:
                timeout = _DRAIN_IDLE_MS
            else:
                timeout = -1 if pidfd is not None else _REAP_POLL_MS
            events = self._poller.poll(timeout)
            for fd, mask in events:
                if fd == master and mask & _READABLE:
                    self._pump_output()
                elif fd == self._stdin_fd:
                    self._read_stdin()
                elif fd == wake_r:
                    self._read_inbox(wake_r)
                elif fd == pidfd:
                    self._set_interest(pidfd, 0)
                    self._child.try_reap()
            if pidfd is None and time.monotonic() >= next_check:
                next_check = time.monotonic() + _REAP_POLL_MS / 1000
                self._child.try_reap()
            self._flush_to_child()
            if self._child.status is None:
                continue
            reaped_at = reaped_at or time.monotonic()
            if not self._master_open or self._inbox.stop_requested or not events:
                return
            if time.monotonic() - reaped_at > _DRAIN_MAX_S:
                return

    def _update_interest(self) -> None:
        master = 0
        if self._master_open:
            master = select.POLLIN | (select.POLLOUT if self._to_child else 0)
        self._set_interest(self._child.fd, master)
        reading = self._stdin_open and not self._inbox.stop_requested
        reading = reading and len(self._to_child) < _INPUT_HIGH_WATER
        if self._stdin_fd >= 0:
            self._set_interest(self._stdin_fd, select.POLLIN if reading else 0)

    def _set_interest(self, fd: int, mask: int) -> None:
        if self._interest.get(fd, 0) != mask:
            if mask:
                self._poller.register(fd, mask)
            else:
                self._poller.unregister(fd)
            self._interest[fd] = mask

    def _pump_output(self) -> None:
        data = self._read_master()
        if not data:
            return
        if self._stdout_ok:
            try:
                write_all(self._stdout_fd, data)
            except OSError:  # our terminal is gone (EIO/EPIPE): keep draining so the child never blocks
                self._stdout_ok = False
        if self._on_output is not None:
            try:
                self._on_output(data)
            except Exception:
                _log.exception("PTY output observer failed; it will not be called again")
                self._on_output = None

    def _read_master(self) -> bytes:
        """What the child's output holds right now (up to _READ_SIZE), as one chunk.

        A PTY hands out at most ~4 KiB per read: gathering what is already there saves poll()
        and write() calls on bulk output and adds no latency, since nothing is waited for."""
        chunks: list[bytes] = []
        size = 0
        while size < _READ_SIZE:
            try:
                chunk = os.read(self._child.fd, _READ_SIZE - size)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
                chunk = b""  # Linux reports a PTY whose child side is closed as EIO: that is EOF
            if not chunk:
                self._master_open = False
                self._to_child.clear()
                break
            chunks.append(chunk)
            size += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _read_stdin(self) -> None:
        try:
            data = os.read(self._stdin_fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:  # EIO: our terminal hung up; EBADF: there is no stdin
            data = b""
        if data:
            self._to_child += data
        else:  # EOF: stop reading stdin, keep pumping output
            self._stdin_open = False

    def _read_inbox(self, wake_r: int) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(wake_r, 4096):
                pass
        self._to_child += self._inbox.take()
        if self._inbox.stop_requested:
            self._to_child.clear()

    def _flush_to_child(self) -> None:
        if not self._to_child or not self._master_open:
            return
        try:
            written = os.write(self._child.fd, self._to_child)
        except BlockingIOError:
            return
        except OSError:  # the child side is gone; its EOF and exit follow
            written = len(self._to_child)
        del self._to_child[:written]


def _open_pidfd(pid: int) -> int | None:
    # A pidfd turns "the child exited" into a poll() event, so a grandchild that keeps the PTY
    # open (and thus keeps its EOF away) cannot keep us waiting.
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


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
