"""Job control: Ctrl-Z, `jobs`, `fg`, `bg` and `kill %1` in a real interactive bash on a pexpect PTY.

The child stops itself the way Claude does on Ctrl-Z (`kill(0, SIGTSTP)` from its raw-mode TUI); the
pass-through must then stop as one shell job and give the terminal back, and on `fg` take it again and
continue the child. bash's prompt line prints `$?` and `stty -g` (tests/support/happy_tui.py), so every
prompt also shows whether the terminal settings are the ones from before the run. `set -b` makes bash
report a job's state change at once, so the tests wait on its report instead of polling.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pexpect
import pytest

from happy_launcher.local.job_control import JobControl
from tests.support.happy_tui import SHELL_ENV, wait_pid_gone

CHILD = [sys.executable, str(Path(__file__).parents[2] / "support" / "pty_children" / "child.py")]
PASSTHROUGH = [sys.executable, "-m", "happy_launcher.local.passthrough", "--"]
TIMEOUT = 10
PROMPT = re.compile(rb"RC=(\d+) AFTER (\S+)\r\n")
STOPPED = 128 + signal.SIGTSTP  # `$?` of a job that stopped
MODES_RESET = b"\x1b[?2004l\x1b[?1049l"  # what the `suspend` child leaves on, switched off
END_OF_INPUT = b"\x04\x04\x04"
pytestmark = pytest.mark.timeout(60)


class Bash:
    """An interactive bash (job control on) on a pexpect PTY: the user's shell and terminal."""

    def __init__(self, dims: tuple[int, int] = (24, 80)) -> None:
        env = {**os.environ, **SHELL_ENV}
        self.proc = pexpect.spawn("/bin/bash", ["--norc", "--noprofile", "-i"], env=env, dimensions=dims)
        self.proc.timeout = TIMEOUT
        self.stty = self.prompt()[1]
        self.run("set -b")

    def prompt(self) -> tuple[int, bytes]:
        """Wait for the next prompt; (`$?`, `stty -g`); what came before it is in `self.proc.before`."""
        self.proc.expect(PROMPT)
        return int(self.proc.match.group(1)), self.proc.match.group(2)

    def run(self, line: str) -> bytes:
        """Type `line`; what it printed. The terminal settings must be the ones from the start."""
        self.proc.sendline(line)
        _, stty = self.prompt()
        printed: bytes = self.proc.before
        assert stty == self.stty
        return printed

    def start(self, child_args: list[str]) -> tuple[int, int]:
        """Run the pass-through with the child in the foreground; (pass-through pid, child pid)."""
        self.proc.sendline(shlex.join([*PASSTHROUGH, *CHILD, *child_args]))
        self.proc.expect(rb"READY (\d+) (\d+)\r\n")
        return int(self.proc.match.group(1)), int(self.proc.match.group(2))

    def suspend(self) -> bytes:
        """Ctrl-Z, as the child sees it: a "z". What the terminal got before the prompt came back."""
        self.proc.send(b"z")
        code, stty = self.prompt()
        printed: bytes = self.proc.before
        assert code == STOPPED
        assert stty == self.stty, "terminal settings not restored on suspend"
        return printed

    def run_and_report(self, line: str, report: bytes) -> None:
        """Type `line` and wait for its prompt and for bash's report on the job (`set -b`: printed
        when the job changes state, so before or after that prompt)."""
        self.proc.sendline(line)
        pending = {0, 1}
        while pending:
            pending.discard(self.proc.expect([PROMPT, rb"\[1\]\+\s+" + report]))

    def close(self) -> None:
        self.proc.close(force=True)


@pytest.fixture
def bash() -> Iterator[Bash]:
    shell = Bash()
    yield shell
    shell.close()


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize(
    "stop_signal",
    [signal.SIGTSTP, signal.SIGSTOP, signal.SIGTTIN, signal.SIGTTOU],
    ids=["SIGTSTP", "SIGSTOP", "SIGTTIN", "SIGTTOU"],
)
def test_child_stop_suspends_the_job_and_fg_resumes_it(bash: Bash, stop_signal: signal.Signals) -> None:
    passthrough, child = bash.start(["suspend", str(int(stop_signal))])
    bash.proc.send(b"ab")
    bash.proc.expect_exact(b"6162\r\n")

    printed = bash.suspend()
    # The child's last words reach the terminal first, then the modes it left on are switched off.
    assert re.search(
        rb"SUSPENDING \d+ \d+\r\n" + re.escape(MODES_RESET) + rb"\r?\n?\[1\]\+\s+Stopped", printed
    )
    assert state(passthrough) == "T"
    assert state(child) == "T"
    assert b"Stopped" in bash.run("jobs")

    bash.proc.setwinsize(30, 100)  # the window changed while the job was stopped
    bash.proc.sendline("fg")
    bash.proc.expect_exact(b"RESUMED 30 100\r\n")
    bash.proc.send(b"\x03")  # raw mode again: ^C is a byte for the child, not a SIGINT
    bash.proc.expect_exact(b"03\r\n")
    bash.proc.send(END_OF_INPUT)
    code, stty = bash.prompt()
    assert (code, stty) == (0, bash.stty)


def test_bg_stops_again_and_kill_ends_the_job(bash: Bash) -> None:
    passthrough, child = bash.start(["suspend", str(int(signal.SIGTSTP))])
    bash.suspend()

    # Continued in the background, it stops again rather than run without its terminal.
    bash.run_and_report("bg", rb"Stopped")
    assert state(child) == "T"

    # SIGCONT and SIGTERM: the child is ended, the pass-through exits 128 + SIGTERM.
    bash.run_and_report("kill %1", rb"Exit 143")
    assert wait_pid_gone(child, TIMEOUT)
    assert wait_pid_gone(passthrough, TIMEOUT)
    assert b"Stopped" not in bash.run("jobs")


# --------------------------------------------------------------------------------------------------
# JobControl's decisions, against fakes of the PTY session and the user's terminal


class FakeChild:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def pause_input(self) -> None:
        self.log.append("pause")

    def resume_input(self) -> None:
        self.log.append("resume")

    def resize(self, rows: int, cols: int) -> None:
        self.log.append(f"resize {rows}x{cols}")

    def continue_child(self) -> None:
        self.log.append("continue")


class FakeTerminal:
    """`stop_job` "returns when continued": in the foreground or not, as scripted in `fronts`."""

    def __init__(self, log: list[str], fronts: list[bool]) -> None:
        self.log = log
        self.fronts = fronts
        self.front = True

    def restore(self) -> None:
        self.log.append("restore")

    def reacquire(self) -> None:
        self.log.append("reacquire")

    def size(self) -> tuple[int, int]:
        return 30, 100

    def in_foreground(self) -> bool:
        return self.front

    def stop_job(self) -> None:
        self.log.append("stop")
        self.front = self.fronts.pop(0)


RESUMED = ["reacquire", "resize 30x100", "resume", "continue"]


def job(fronts: list[bool]) -> tuple[JobControl, list[str]]:
    log: list[str] = []
    return JobControl(FakeChild(log), FakeTerminal(log, fronts)), log


@pytest.mark.anyio
async def test_stop_then_fg() -> None:
    control, log = job([True])
    await control.child_stopped()
    assert log == ["pause", "restore", "stop", *RESUMED]
    assert not control.continued()  # the SIGCONT of that `fg`: nothing left to resume
    assert log[-2:] == ["reacquire", "resize 30x100"]


@pytest.mark.anyio
async def test_stop_then_bg_stops_again_then_fg() -> None:
    control, log = job([False, True])
    await control.child_stopped()
    assert log == ["pause", "restore", "stop"]
    assert control.continued()  # `bg`: the caller runs stop_again in a task
    assert not control.continued()  # ... only once
    await control.stop_again()
    assert log == ["pause", "restore", "stop", "stop", *RESUMED]


@pytest.mark.anyio
async def test_ended_while_suspended_never_stops_again() -> None:
    control, log = job([False])
    await control.child_stopped()
    assert control.continued()  # `kill %1`: SIGCONT first ...
    async with anyio.create_task_group() as tg:
        tg.start_soon(control.stop_again)
        control.end()  # ... then SIGTERM
    assert log == ["pause", "restore", "stop"]
    await control.child_stopped()  # a stop while ending is not followed either
    assert log == ["pause", "restore", "stop"]
