"""The PTY pass-through layer (happy_launcher.local), driven through real processes and PTYs.

End-to-end tests run `sh -c 'stty -g; python -m happy_launcher.local.passthrough -- child; stty -g'`
under an outer pexpect PTY (the "user's terminal"): the same shell prints the terminal settings
before and after the run, and the exit code. The child (tests/support/pty_children/child.py) is a
tiny raw-mode TUI that handshakes over its output; nothing here sleeps to synchronise.
"""

from __future__ import annotations

import hashlib
import os
import pty
import re
import select
import shlex
import signal
import subprocess
import sys
import termios
import threading
import tty
from pathlib import Path

import anyio
import pexpect
import pytest

from happy_launcher.local.exits import ChildExit
from happy_launcher.local.passthrough import run_passthrough
from happy_launcher.local.pty_pump import ChildProcess, Inbox
from happy_launcher.local.pty_session import PtySession
from happy_launcher.terminal.guard import ModeTracker, terminal_size
from tests.support.happy_tui import wait_pid_gone

CHILD = [sys.executable, str(Path(__file__).parents[2] / "support" / "pty_children" / "child.py")]
PASSTHROUGH = [sys.executable, "-m", "happy_launcher.local.passthrough", "--"]
TIMEOUT = 10
END_LINE = re.compile(rb"RC=(\d+) AFTER (\S+)\r\n")
pytestmark = pytest.mark.timeout(60)  # a regression here tends to hang rather than fail

END_OF_INPUT = b"\x04\x04\x04"  # makes the `hex` child exit
# What the `modes` child leaves on (alt screen, kitty push, bracketed paste, hidden cursor), undone.
MODES_RESET = b"\x1b[<1u\x1b[?2004l\x1b[?1049l\x1b[?25h"


class Outer:
    """The user's terminal: a shell on a pexpect PTY that runs the pass-through once."""

    def __init__(
        self, child_args: list[str], *, stdin_cmd: str = "", dims: tuple[int, int] = (24, 80)
    ) -> None:
        inner = shlex.join([*PASSTHROUGH, *CHILD, *child_args])
        if stdin_cmd:
            inner = f"{stdin_cmd} | {inner}"
        script = f'echo "BEFORE $(stty -g)"; {inner}; echo "RC=$? AFTER $(stty -g)"'
        self.proc = pexpect.spawn("sh", ["-c", script], dimensions=dims, timeout=TIMEOUT)
        self.proc.expect(rb"BEFORE (\S+)\r\n")
        self.settings_before: bytes = self.proc.match.group(1)

    def handshake(self, tag: bytes) -> int:
        """Wait for the child's `TAG <pass-through pid> <pid>` line; return the pass-through's pid."""
        return self.handshake_pids(tag)[0]

    def handshake_pids(self, tag: bytes) -> tuple[int, int]:
        """Wait for the child's `TAG <pass-through pid> <pid>` line; return both pids."""
        self.proc.expect(tag + rb" (\d+) (\d+)\r+\n")
        return int(self.proc.match.group(1)), int(self.proc.match.group(2))

    def finish(self) -> tuple[int, bytes]:
        """Wait for the run to end, check the terminal settings came back; return (exit code, output)."""
        self.proc.expect(END_LINE)
        code, settings_after = int(self.proc.match.group(1)), self.proc.match.group(2)
        printed: bytes = self.proc.before
        self.proc.expect(pexpect.EOF)
        assert settings_after == self.settings_before, "terminal settings not restored"
        return code, printed

    def read_hex(self, count: int) -> bytes:
        """Collect the `hex` child's per-read hex lines until `count` bytes are accounted for."""
        received = b""
        while len(received) < count:
            self.proc.expect(rb"([0-9a-f]+)\r\n")
            received += bytes.fromhex(self.proc.match.group(1).decode())
        return received


@pytest.mark.parametrize(
    ("child_args", "expected"), [(["exit", "0"], 0), (["exit", "3"], 3), (["kill9"], 137)]
)
def test_exit_code_passes_through(child_args: list[str], expected: int) -> None:
    code, _ = Outer(child_args).finish()
    assert code == expected


def test_a_command_that_cannot_start(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho ran\n")
    done = subprocess.run(
        [*PASSTHROUGH, str(script)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (done.returncode, done.stdout) == (126, "")
    assert done.stderr == f"happy: {script}: Permission denied\n"

    session, fds = devnull_session([], Collector(), argv=[str(script)])
    fds_before = open_fd_count()
    try:
        with pytest.raises(PermissionError):
            anyio.run(session.run)
    finally:
        for fd in fds:
            os.close(fd)
    assert open_fd_count() == fds_before - 2  # the PTY and the error pipe are closed too


def test_typed_bytes_reach_the_child_intact() -> None:
    outer = Outer(["hex"])
    outer.handshake(b"READY")
    payloads = [
        b"hello world",
        "héllo ✓ 日本".encode(),
        b"\x1b[200~pasted\nline two\ttab\x1b[201~",
        bytes(range(256)),  # every control byte too: ^C, ^D, ^S, ^Z, DEL, NUL, lone ESC...
    ]
    for payload in payloads:
        outer.proc.send(payload)
        assert outer.read_hex(len(payload)) == payload
    outer.proc.send(END_OF_INPUT)
    code, _ = outer.finish()
    assert code == 0


def test_large_output_arrives_complete() -> None:
    size = 6 * 1024 * 1024
    outer = Outer(["flood", str(size)])
    outer.proc.expect_exact(b"START\r\n")
    data = bytearray(outer.proc.buffer)
    outer.proc.buffer = b""
    trailer = re.compile(rb"\r\nDONE ([0-9a-f]{64})\r\n")
    while len(data) < size or not trailer.search(data, size):
        data += outer.proc.read_nonblocking(1 << 16, timeout=TIMEOUT)
    match = trailer.search(data, size)
    assert match is not None and match.start() == size
    assert hashlib.sha256(data[:size]).hexdigest().encode() == match.group(1)
    outer.proc.buffer = bytes(data[match.end() :])
    code, _ = outer.finish()
    assert code == 0


def test_resize_reaches_the_child() -> None:
    outer = Outer(["sizes"], dims=(30, 100))
    outer.proc.expect_exact(b"SIZE 30 100\r\n")
    outer.proc.setwinsize(40, 132)
    outer.proc.expect_exact(b"SIZE 40 132\r\n")
    outer.proc.send(b"q")
    code, _ = outer.finish()
    assert code == 0


@pytest.mark.parametrize(
    ("sig", "child_args"),
    [
        (signal.SIGTERM, ["modes"]),
        (signal.SIGHUP, ["modes"]),
        (signal.SIGINT, ["modes"]),
        (signal.SIGINT, ["modes", "1"]),  # a child that exits 0 on SIGINT, as Claude does
        (signal.SIGQUIT, ["modes", "1"]),
    ],
    ids=["SIGTERM", "SIGHUP", "SIGINT", "SIGINT-exit-0", "SIGQUIT-exit-0"],
)
def test_ended_by_signal_stops_child_and_restores_terminal(
    sig: signal.Signals, child_args: list[str]
) -> None:
    outer = Outer(child_args)
    passthrough_pid, child_pid = outer.handshake_pids(b"MODES-ON")
    os.kill(passthrough_pid, sig)
    code, printed = outer.finish()
    assert code == 128 + sig  # whatever the child's own status: as if the signal had ended us
    assert printed.endswith(MODES_RESET)
    assert wait_pid_gone(child_pid, TIMEOUT)


def test_terminal_hangup_stops_child_and_exits() -> None:
    # The terminal window closes: the master side of our terminal goes away under us.
    pid, master = pty.fork()
    if pid == 0:  # pragma: no cover - the forked copy of pytest must never return
        try:
            os.execv(sys.executable, [*PASSTHROUGH, *CHILD, "modes"])
        finally:
            os._exit(127)
    try:
        seen = b""
        while not (match := re.search(rb"MODES-ON \d+ (\d+)\r\n", seen)):
            assert select.select([master], [], [], TIMEOUT)[0], f"no handshake in {seen!r}"
            seen += os.read(master, 4096)
        child_exit = os.pidfd_open(int(match.group(1)))
    finally:
        os.close(master)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGHUP  # ran to completion: not killed
    assert select.select([child_exit], [], [], TIMEOUT)[0], "the child outlived us"
    os.close(child_exit)


def test_piped_stdin_is_forwarded_without_raw_mode_and_sigint_is_relayed() -> None:
    outer = Outer(["read", "3"], stdin_cmd="printf abc")
    outer.handshake(b"READY")
    outer.proc.expect_exact(b"GOT 616263")
    passthrough_pid = outer.handshake(b"WAIT")
    lflag = termios.tcgetattr(outer.proc.child_fd)[3]  # the master reports its terminal's settings
    assert lflag & termios.ICANON and lflag & termios.ECHO, "stdin is a pipe: the terminal stays cooked"
    os.kill(passthrough_pid, signal.SIGINT)
    code, _ = outer.finish()
    assert code == 128 + signal.SIGINT


def test_exception_in_on_started_stops_child_and_restores_terminal() -> None:
    master, slave = os.openpty()
    try:
        settings_before = termios.tcgetattr(slave)
        modes_on = threading.Event()

        def watch(chunk: bytes) -> None:
            if b"MODES-ON" in chunk:
                modes_on.set()

        async def fail_once_modes_are_on(session: PtySession) -> None:
            assert await anyio.to_thread.run_sync(modes_on.wait, TIMEOUT)
            raise LookupError("boom")

        async def scenario() -> ChildExit:
            return await run_passthrough(
                [*CHILD, "modes"],
                env=os.environ,
                cwd=Path.cwd(),
                stdin_fd=slave,
                stdout_fd=slave,
                on_started=fail_once_modes_are_on,
                on_output=watch,
            )

        with pytest.raises(LookupError, match="boom"):
            anyio.run(scenario)
        assert termios.tcgetattr(slave) == settings_before
        assert read_available(master).endswith(MODES_RESET)
    finally:
        os.close(master)
        os.close(slave)


def read_available(fd: int) -> bytes:
    os.set_blocking(fd, False)
    data = b""
    try:
        while chunk := os.read(fd, 65536):
            data += chunk
    except BlockingIOError:
        pass
    return data


class Collector:
    """on_output target: waits (from async code) for a marker in the child's output."""

    def __init__(self) -> None:
        self.data = b""
        self._changed = threading.Condition()

    def __call__(self, chunk: bytes) -> None:
        with self._changed:
            self.data += chunk
            self._changed.notify_all()

    def _wait_sync(self, marker: bytes) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: marker in self.data, TIMEOUT)

    async def wait_for(self, marker: bytes) -> None:
        assert await anyio.to_thread.run_sync(self._wait_sync, marker), f"no {marker!r} in {self.data!r}"


def devnull_session(
    child_args: list[str], collector: Collector, argv: list[str] | None = None
) -> tuple[PtySession, list[int]]:
    fds = [os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_WRONLY)]
    session = PtySession(
        argv or [*CHILD, *child_args],
        env=os.environ,
        cwd=Path.cwd(),
        stdin_fd=fds[0],
        stdout_fd=fds[1],
        on_output=collector,
        dimensions=(24, 80),
    )
    return session, fds


def open_fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_session_api_write_input_and_stop() -> None:
    collector = Collector()
    session, fds = devnull_session(["hex"], collector)
    fds_before = open_fd_count()

    async def scenario() -> tuple[int, ChildExit]:
        async with anyio.create_task_group() as tg:
            exits: list[ChildExit] = []

            async def run() -> None:
                exits.append(await session.run())

            tg.start_soon(run)
            await collector.wait_for(b"READY")
            assert session.pid is not None
            session.write_input(b"xyz")  # stdin (/dev/null) hit EOF long ago: the pump still runs
            await collector.wait_for(b"78797a")
            await session.stop()
        assert session.pid is not None
        return session.pid, exits[0]

    try:
        pid, child_exit = anyio.run(scenario)
    finally:
        for fd in fds:
            os.close(fd)
    assert child_exit == ChildExit(code=128 + signal.SIGHUP, signal=signal.SIGHUP, stopped_by_us=True)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: no zombie
    assert open_fd_count() == fds_before - 2


def test_cancelled_run_stops_and_reaps_the_child() -> None:
    collector = Collector()
    session, fds = devnull_session(["hex"], collector)
    fds_before = open_fd_count()

    async def scenario() -> int:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                pid: int = await tg.start(session.run)
                await collector.wait_for(b"READY")
                scope.cancel()
        return pid

    try:
        pid = anyio.run(scenario)
    finally:
        for fd in fds:
            os.close(fd)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert open_fd_count() == fds_before - 2


# --- mode tracker ------------------------------------------------------------------------------


def tracked(*chunks: bytes) -> bytes:
    tracker = ModeTracker()
    for chunk in chunks:
        tracker.feed(chunk)
    return tracker.reset_sequence()


def test_modes_left_on_are_reset_in_a_safe_order() -> None:
    modes = b"\x1b[?1049h\x1b[>1u\x1b[?2004h\x1b[?25l"
    assert tracked(b"text", modes, b"more text") == MODES_RESET
    assert tracked(b"\x1b[?1000;1006h\x1b[?1004h\x1b[?1h") == b"\x1b[?1006l\x1b[?1000l\x1b[?1004l\x1b[?1l"


def test_theme_notifications_and_modify_other_keys_are_reset() -> None:
    assert tracked(b"\x1b[?2031h\x1b[>4;2m") == b"\x1b[?2031l\x1b[>4m"
    assert tracked(b"\x1b[?2031h\x1b[>4;2m", b"\x1b[?2031l\x1b[>4;0m") == b""
    assert tracked(b"\x1b[>4;1m", b"\x1b[>4m") == b""  # `CSI > 4 m`: back to the default (off)
    assert tracked(b"\x1b[>1;2m\x1b[38;2;1;2;3m") == b""  # other xterm resources, SGR colours


def test_sequences_split_across_chunks_are_tracked() -> None:
    stream = b"abc\x1b[?1049h\x1b[>5u\x1b[?2004hxyz\x1b[?25l\x1b[38;5;12mdone"
    for cut in range(len(stream) + 1):
        assert tracked(stream[:cut], stream[cut:]) == MODES_RESET, cut
    assert tracked(*(bytes([b]) for b in stream)) == MODES_RESET


def test_nothing_is_reset_for_modes_turned_off_again() -> None:
    assert (
        tracked(b"\x1b[?1049h\x1b[>1u\x1b[?2004h\x1b[?25l", b"\x1b[?25h\x1b[?2004l\x1b[<u\x1b[?1049l") == b""
    )
    assert tracked(b"plain output\r\n" * 1000) == b""
    # Not mode changes: SGR, cursor restore (CSI u), kitty flag query (CSI ? u), DECRQM.
    assert tracked(b"\x1b[1;31m\x1b[u\x1b[?u\x1b[?1049$p") == b""


def test_kitty_stacks_are_popped_per_screen() -> None:
    # pushed twice and popped once on the main screen, pushed once on the alternate screen
    stream = b"\x1b[>1u\x1b[>3u\x1b[<u\x1b[?1049h\x1b[>1u"
    assert tracked(stream) == b"\x1b[<1u\x1b[?1049l\x1b[<1u"
    assert tracked(b"\x1b[=5;1u") == b"\x1b[=0;1u"
    assert tracked(b"\x1b[=5;1u\x1b[=0;1u") == b""


def test_terminal_size_falls_back_to_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    try:
        monkeypatch.setenv("LINES", "50")
        monkeypatch.setenv("COLUMNS", "120")
        assert terminal_size(read_end, write_end) == (50, 120)
        monkeypatch.delenv("LINES")
        monkeypatch.delenv("COLUMNS")
        assert terminal_size(read_end) == (24, 80)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_input_queued_counts_what_the_program_has_not_read_yet() -> None:
    master, slave = os.openpty()
    tty.setraw(slave)
    child = ChildProcess(os.getpid(), master)  # only its master fd is used here
    try:
        os.write(master, b"x" * 50)
        # The kernel moves a master's write to the terminal's queue on its own time: wait for it.
        assert select.select([slave], [], [], TIMEOUT)[0] == [slave]
        assert child.input_queued() == 50
        os.read(slave, 20)
        assert child.input_queued() == 30
        os.read(slave, 30)
        assert child.input_queued() == 0
    finally:
        child.close()
        os.close(slave)
    assert child.input_queued() == 0  # closed: nothing to count, no error


def test_the_inbox_counts_what_the_pump_has_not_written() -> None:
    inbox = Inbox()
    inbox.put(b"abc")
    inbox.put(b"de")
    assert inbox.unwritten == 5
    inbox.written(4)
    assert inbox.unwritten == 1
    inbox.written(3)  # the user's keys went too: never below nothing
    assert inbox.unwritten == 0


def test_input_unread_is_nothing_once_the_child_has_read_it_or_is_gone() -> None:
    collector = Collector()
    session, fds = devnull_session(["read", "3"], collector)

    async def scenario() -> tuple[int, int]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await collector.wait_for(b"READY")
            session.write_input(b"abc")
            await collector.wait_for(b"GOT 616263")
            unread = session.input_unread()
            await session.stop()
        session.write_input(b"late")  # no child to read it: nobody should wait for that
        return unread, session.input_unread()

    try:
        assert anyio.run(scenario) == (0, 0)
    finally:
        for fd in fds:
            os.close(fd)
