"""The session leader inside our PTY: runs the command as the terminal's foreground job, as a shell does.

Why it exists: a program that is itself the leader of its terminal session has an orphaned process
group (its parent, happy, is in another session), and the kernel discards the SIGTSTP such a group
sends itself, so Ctrl-Z in a TUI (Claude Code does `kill(0, SIGTSTP)`) did nothing. Under this
leader the job's group has a parent in its own session, so it stops as it does under a shell.

A stop of the job is reported to happy by stopping this process too (SIGSTOP: the one stop signal
an orphaned group obeys); happy's SIGCONT continues the job. Other signals sent to this process are
passed on to the job, and it ends the way the job ended (same exit status or same fatal signal).

The leader is a fork of happy that never returns to happy's code (no second interpreter to start:
~20 ms of Claude's start-up); it imports nothing, uses no lock another thread may have held at the
fork, and ends with `os._exit`.
"""

from __future__ import annotations

import gc
import os
import resource
import signal
import termios
from collections.abc import Callable, Mapping
from types import FrameType
from typing import NamedTuple, NoReturn

from happy_launcher.terminal.guard import TermAttrs

_FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)
# This process hands the terminal over and never reads it: terminal job-control signals are moot.
_IGNORED = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
# Ignored dispositions survive exec: Python ignores these two, the job must get the defaults.
_RESET = (*_IGNORED, signal.SIGPIPE, signal.SIGXFSZ)
_CWD, _EXEC = b"c", b"x"  # which step failed, before the errno on the error pipe


class PtySpec(NamedTuple):
    """What the leader sets up on its PTY before the job starts, and what the job runs."""

    argv: list[str]  # argv[0]: an absolute path
    env: Mapping[str, str]
    cwd: str
    size: tuple[int, int]  # (rows, cols)
    attrs: TermAttrs | None  # the user's termios, copied onto the PTY as script(1) does


def spawn_leader(spec: PtySpec) -> tuple[int, int]:
    """Fork a session leader on a new PTY that runs `spec` as its foreground job; (leader pid, PTY
    master fd). Returns once the command is exec'd; raises OSError if it could not be (bad cwd,
    not executable...), after reaping the leader."""
    err_read, err_write = os.pipe()  # close-on-exec: EOF once the command is exec'd
    try:
        pid, master = os.forkpty()
    except BaseException:
        os.close(err_read)
        os.close(err_write)
        raise
    if pid == 0:  # pragma: no cover - the forked child (coverage cannot follow it)
        _lead(spec, err_write)
    os.close(err_write)
    with os.fdopen(err_read, "rb") as errors:
        failure = errors.read()
    if failure:
        os.waitpid(pid, 0)  # the leader exits at once after a failure
        os.close(master)
        step, code = failure[:1], int(failure[1:])
        raise OSError(code, os.strerror(code), spec.cwd if step == _CWD else spec.argv[0])
    return pid, master


def _lead(spec: PtySpec, err_fd: int) -> NoReturn:
    """The forked leader: set up the PTY, start the job, wait for it. Never returns."""
    step = _CWD
    try:
        gc.disable()  # a collection would touch (and so copy) most of happy's memory
        _drop_happy_state(err_fd)
        os.chdir(spec.cwd)
        termios.tcsetwinsize(0, spec.size)
        if spec.attrs is not None:
            termios.tcsetattr(0, termios.TCSANOW, spec.attrs)
        step = _EXEC
        for sig in _IGNORED:
            signal.signal(sig, signal.SIG_IGN)
        # Blocked across the fork, so the job never runs our handlers and we never miss one (and
        # only these: happy may have blocked others, which this process must get).
        signal.pthread_sigmask(signal.SIG_SETMASK, _FORWARDED)
        job = os.fork()
        if job == 0:
            _exec_job(spec, err_fd)
        os.close(err_fd)
        _foreground(job)
        _wait_and_end(job)
    except BaseException as exc:
        code = exc.errno if isinstance(exc, OSError) and exc.errno else 0
        _quietly(os.write, err_fd, step + str(code).encode())
    os._exit(127)


def _drop_happy_state(keep_fd: int) -> None:
    """Forget what this process inherited from happy: its descriptors (but the PTY and
    `keep_fd`), its signal handlers and its event loop's signal wake-up fd."""
    signal.set_wakeup_fd(-1)
    for sig in signal.valid_signals():
        if callable(signal.getsignal(sig)):
            signal.signal(sig, signal.SIG_DFL)
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, os.sysconf("SC_OPEN_MAX"))


def _exec_job(spec: PtySpec, err_fd: int) -> NoReturn:
    """In the forked job: own process group, the terminal's foreground, default signals, exec."""
    try:
        _foreground(os.getpid())
        for sig in _RESET:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        os.execve(spec.argv[0], spec.argv, spec.env)
    except OSError as exc:
        _quietly(os.write, err_fd, _EXEC + str(exc.errno or 0).encode())
    os._exit(127)


def _foreground(pid: int) -> None:
    # Done by both sides of the fork, as shells do, so neither depends on the other being first
    # (the parent's setpgid fails once the job has exec'd: it is done by then).
    _quietly(os.setpgid, pid, pid)
    _quietly(os.tcsetpgrp, 0, pid)


def _wait_and_end(job: int) -> NoReturn:
    def pass_on(sig: int, _frame: FrameType | None) -> None:
        _quietly(os.kill, job, sig)

    for sig in _FORWARDED:
        signal.signal(sig, pass_on)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    _end_like(_wait(job))


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
    try:  # noqa: SIM105 - no contextlib: nothing that takes a lock after the fork
        func(*args)
    except (OSError, ValueError):
        pass
