"""The session leader inside our PTY: runs the command as the terminal's foreground job, as a shell does.

Why it exists: a program that is itself the leader of its terminal session has an orphaned process
group (its parent, happy, is in another session), and the kernel discards the SIGTSTP such a group
sends itself, so Ctrl-Z in a TUI (Claude Code does `kill(0, SIGTSTP)`) did nothing. Under this
leader the job's group has a parent in its own session, so it stops as it does under a shell.

A stop of the job is reported to happy by stopping this process too (SIGSTOP: the one stop signal
an orphaned group obeys); happy's SIGCONT continues the job. Other signals sent to this process are
passed on to the job, and it ends the way the job ended (same exit status or same fatal signal).

Run as `python -I -S pty_leader.py ERRFD CMD ARGS...` (stdlib only, no site: ~20 ms to the command's exec);
CMD is an absolute path. If CMD cannot be executed, its errno is written to ERRFD (decimal).
"""

from __future__ import annotations

import os
import resource
import signal
import sys

# For annotations only: start-up time is Claude's start-up time, and typing, contextlib and
# functools alone would add ~6 ms to this program's ~20 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import NoReturn

_FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)
# This process hands the terminal over and never reads it: terminal job-control signals are moot.
_IGNORED = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
# Ignored dispositions survive exec: Python ignores these two, the job must get the defaults.
_RESET = (*_IGNORED, signal.SIGPIPE, signal.SIGXFSZ)


def main(argv: list[str]) -> NoReturn:
    err_fd, command = int(argv[0]), argv[1:]
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    # Blocked across the fork, so the job never runs our handlers and we never miss one.
    signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    pid = os.fork()
    if pid == 0:
        _exec_job(err_fd, command)
    os.close(err_fd)
    _foreground(pid)

    def pass_on(sig: int, _frame: FrameType | None) -> None:
        _quietly(os.kill, pid, sig)

    for sig in _FORWARDED:
        signal.signal(sig, pass_on)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
    _end_like(_wait(pid))


def _exec_job(err_fd: int, command: list[str]) -> NoReturn:
    """In the forked job: own process group, the terminal's foreground, default signals, exec."""
    try:
        _foreground(os.getpid())
        for sig in _RESET:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        os.set_inheritable(err_fd, False)
        os.execv(command[0], command)
    except OSError as exc:
        _quietly(os.write, err_fd, str(exc.errno or 0).encode())
    os._exit(127)


def _foreground(pid: int) -> None:
    # Done by both sides of the fork, as shells do, so neither depends on the other being first
    # (the parent's setpgid fails once the job has exec'd: it is done by then).
    _quietly(os.setpgid, pid, pid)
    _quietly(os.tcsetpgrp, 0, pid)


def _wait(pid: int) -> int:
    """Wait for the job to end, relaying its stops; its final wait status."""
    while True:
        _, status = os.waitpid(pid, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            return status
        os.kill(os.getpid(), signal.SIGSTOP)  # happy notices, stops itself; its SIGCONT brings us back
        _quietly(os.killpg, pid, signal.SIGCONT)


def _end_like(status: int) -> NoReturn:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal: die of the same one (without a core file of our own)
        _quietly(resource.setrlimit, resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        _quietly(signal.signal, -code, signal.SIG_DFL)  # (SIGKILL's cannot be set, nor needs to be)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (-code,))
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


def _quietly(func: Callable[..., object], *args: object) -> None:
    try:  # noqa: SIM105 - not contextlib.suppress: see the imports
        func(*args)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
