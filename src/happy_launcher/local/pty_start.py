"""Spawning a program under a new PTY we own, possibly before anything asynchronous is loaded.

`happy claude` starts Claude first and loads the event loop, the PTY pump and the mirror while
Claude boots: ~100 ms of imports that Claude's start-up would otherwise wait for (`start_pty`).
Until the loop's signal handling is in place (`run_passthrough`), the signals it relays are
blocked, so none is lost and none ends us with Claude left running. Light on purpose.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path

from happy_launcher.local.pty_leader import PtySpec, spawn_leader
from happy_launcher.terminal.guard import TermAttrs, terminal_size

# What `run_passthrough` acts on while the child runs (window size, job control, being ended).
RELAYED_SIGNALS = (
    signal.SIGWINCH,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGCHLD,
    signal.SIGCONT,
)


class StartedPty:
    """A program already running under its PTY, for `run_passthrough` to take over (`take`), or
    to end if it never does (`abandon`)."""

    def __init__(self, pid: int, fd: int, signal_mask: set[int]) -> None:
        self.pid = pid  # its session leader (pty_leader.py)
        self.fd = fd  # the PTY's master side
        self.signal_mask = signal_mask  # ours before RELAYED_SIGNALS were blocked
        self._taken = False

    def take(self) -> tuple[int, int]:
        """(leader pid, PTY master fd): from now on the caller owns them."""
        if self._taken:
            raise RuntimeError("the started PTY was already taken over")
        self._taken = True
        return self.pid, self.fd

    def abandon(self) -> None:
        """Unless it was taken over: kill it, reap it, close the PTY, unblock the signals."""
        if self._taken:
            return
        self._taken = True
        from happy_launcher.local.pty_pump import ChildProcess  # only on this failure path

        child = ChildProcess(self.pid, self.fd)
        child.kill()
        child.try_reap(block=True)
        child.close()
        signal.pthread_sigmask(signal.SIG_SETMASK, self.signal_mask)


def start_pty(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    stdin_fd: int = 0,
    stdout_fd: int = 1,
) -> StartedPty:
    """Spawn `argv` under a new PTY with the size and settings of our terminal (as they are before
    it goes raw), with RELAYED_SIGNALS blocked from now on. Raises OSError if it cannot start."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, RELAYED_SIGNALS)
    try:
        attrs = termios.tcgetattr(stdin_fd) if os.isatty(stdin_fd) else None
        pid, fd = spawn_pty(argv, env=env, cwd=cwd, size=terminal_size(stdout_fd, stdin_fd), attrs=attrs)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    return StartedPty(pid, fd, mask)


def spawn_pty(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    size: tuple[int, int],
    attrs: TermAttrs | None,
) -> tuple[int, int]:
    """Spawn `argv` under a new PTY of `size` (rows, cols) with `attrs` (None: the defaults) as
    the foreground job of its session leader; (leader pid, PTY master fd)."""
    command = _resolve_command(argv[0], env, cwd)
    return spawn_leader(PtySpec([command, *argv[1:]], env, os.fspath(cwd), size, attrs))


def _resolve_command(command: str, env: Mapping[str, str], cwd: str | os.PathLike[str]) -> str:
    # Resolve against the child's PATH and cwd: the leader execs a path.
    if os.sep in command:
        return str(Path(cwd, command))
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "command not found", command)
    return found
