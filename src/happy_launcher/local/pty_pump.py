"""The byte pump of a PTY session: one poll() loop in a dedicated thread moving child output to
our stdout and our stdin (plus injected input) to the child, and the child process it serves."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import select
import signal
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable

from happy_launcher.terminal.fdio import write_all

_log = logging.getLogger(__name__)

_READ_SIZE = 1 << 16
_INPUT_HIGH_WATER = 1 << 20  # stop reading stdin while this much input still waits for the child
_DRAIN_IDLE_MS = 50  # once the child is reaped, this much output silence means we have it all
_DRAIN_MAX_S = 1.0  # ... and a grandchild still writing to the PTY cannot keep us running
_DRAIN_MAX_READS = 64  # a drain request moves at most this many reads (up to 4 MiB)
_REAP_POLL_MS = 100  # exit polling interval where pidfd_open is unavailable
_READABLE = select.POLLIN | select.POLLHUP | select.POLLERR | select.POLLNVAL
_TIOCGPTPEER = getattr(termios, "TIOCGPTPEER", 0x5441)  # Linux >= 4.13; an error elsewhere (then: 0)
# Ctrl-T as a terminal sends it: the plain byte, or the kitty keyboard protocol's sequence.
CTRL_T = (b"\x14", b"\x1b[116;5u")


class ChildProcess:
    """The spawned process and its PTY master fd.

    One lock serialises reaping, signalling, ioctls and closing, so a signal never reaches a
    recycled pid and an ioctl never hits a closed (possibly reused) fd number.
    """

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
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

    def poll_stopped(self) -> bool:
        """True if the child has stopped since the last call (each stop is reported once)."""
        with self._lock:
            if self.status is not None:
                return False
            try:
                return os.waitid(os.P_PID, self.pid, os.WSTOPPED | os.WNOHANG) is not None
            except ChildProcessError:
                return False

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

    def kill(self) -> None:
        """SIGKILL the PTY's foreground job, then the child: a killed leader cannot pass it on."""
        self.signal(signal.SIGKILL, foreground_group=True)
        self.signal(signal.SIGKILL)

    def resize(self, rows: int, cols: int) -> None:
        with self._lock:
            if not self._closed:
                # The kernel sends SIGWINCH to the PTY's foreground process group itself.
                with contextlib.suppress(OSError):
                    fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def input_queued(self) -> int:
        """Bytes in the PTY's input queue that the program has not read yet (0 once gone).
        Counted on the terminal's side, opened from the master for the moment (TIOCGPTPEER)."""
        with self._lock:
            if self._closed:
                return 0
            try:
                peer = fcntl.ioctl(self.fd, _TIOCGPTPEER, os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
            except OSError:
                return 0
            try:
                return int.from_bytes(fcntl.ioctl(peer, termios.FIONREAD, bytes(4)), sys.byteorder)
            except OSError:
                return 0
            finally:
                os.close(peer)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self.fd)


class Inbox:
    """Thread-safe mailbox into the pump thread: input for the child, a stop request, pausing our
    stdin and requests to drain the child's output, plus the self-pipe that wakes the pump's poll()."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data = bytearray()
        self._unwritten = 0  # put, and not yet written to the master
        self.stop_requested = False
        self.input_paused = False
        self._drain_requests: list[Callable[[], None]] = []
        self._wake_fd: int | None = None

    def put(self, data: bytes) -> None:
        with self._lock:
            self._data += data
            self._unwritten += len(data)
            self._wake()

    def written(self, count: int) -> None:
        """The pump wrote `count` bytes to the master. The user's keys count too: while a
        message is typed they are held (`pause_input`), so what is put is all there is."""
        with self._lock:
            self._unwritten = max(self._unwritten - count, 0)

    @property
    def unwritten(self) -> int:
        return self._unwritten

    def request_stop(self) -> None:
        with self._lock:
            self.stop_requested = True
            self._wake()

    def pause_input(self, paused: bool, on_drained: Callable[[], None] | None = None) -> None:
        """Stop (or resume) reading our stdin. `on_drained` is called from the pump thread once the
        output the child has written so far is on our stdout."""
        with self._lock:
            self.input_paused = paused
            if on_drained is not None:
                self._drain_requests.append(on_drained)
            self._wake()

    def take(self) -> bytes:
        with self._lock:
            data = bytes(self._data)
            self._data.clear()
            return data

    def take_drain_requests(self) -> list[Callable[[], None]]:
        with self._lock:
            requests, self._drain_requests = self._drain_requests, []
            return requests

    def attach(self, wake_fd: int | None) -> None:
        # Swapped under the lock so put() never writes to a pipe fd after the pump closed it.
        with self._lock:
            self._wake_fd = wake_fd
            if wake_fd is not None and (self._data or self.stop_requested or self._drain_requests):
                self._wake()

    def _wake(self) -> None:
        if self._wake_fd is not None:
            with contextlib.suppress(BlockingIOError):  # a full pipe is already a pending wake-up
                os.write(self._wake_fd, b"\0")


class Pump:
    """One poll() loop moving child output to stdout and stdin/`Inbox` input to the child.

    `run` returns the child's wait status once the child is reaped and its output drained.
    `on_ctrl_t` (in the pump thread): Ctrl-T is happy's then, taken out of the input (`happy attach`).
    """

    def __init__(
        self,
        child: ChildProcess,
        inbox: Inbox,
        stdin_fd: int,
        stdout_fd: int,
        on_output: Callable[[bytes], None] | None,
        on_ctrl_t: Callable[[], None] | None = None,
    ) -> None:
        self._child, self._inbox = child, inbox
        self._stdin_fd, self._stdout_fd = stdin_fd, stdout_fd
        self._on_output = on_output
        self._on_ctrl_t = on_ctrl_t
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
        # Paused while we are suspended: a read from the background would stop us (SIGTTIN).
        reading = self._stdin_open and not self._inbox.stop_requested and not self._inbox.input_paused
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

    def _pump_output(self) -> bool:
        """Move what the child has written to stdout; False if there was nothing."""
        data = self._read_master()
        if not data:
            return False
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
        return True

    def _drain_output(self) -> None:
        # Bounded: a grandchild that writes without pause cannot hold the caller forever.
        for _ in range(_DRAIN_MAX_READS):
            if not self._master_open or not self._pump_output():
                return

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
        if not data:  # EOF: stop reading stdin, keep pumping output
            self._stdin_open = False
        elif self._on_ctrl_t is not None and any(key in data for key in CTRL_T):
            for key in CTRL_T:  # happy's key, not Claude's
                data = data.replace(key, b"")
            self._to_child += data
            self._on_ctrl_t()
        else:
            self._to_child += data

    def _read_inbox(self, wake_r: int) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(wake_r, 4096):
                pass
        self._to_child += self._inbox.take()
        if self._inbox.stop_requested:
            self._to_child.clear()
        for on_drained in self._inbox.take_drain_requests():
            self._drain_output()
            try:
                on_drained()
            except Exception:
                _log.exception("PTY drain callback failed")

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
        self._inbox.written(written)


def _open_pidfd(pid: int) -> int | None:
    # A pidfd turns "the child exited" into a poll() event, so a grandchild that keeps the PTY
    # open (and thus keeps its EOF away) cannot keep us waiting.
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
