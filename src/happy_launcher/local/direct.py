"""Claude run directly on our own stdin, stdout and stderr: no PTY, no terminal handling.

This is what `happy claude` does without a terminal (pipes, scripts, CI, `-p`): Claude must see
exactly what it would see if it were run as `claude`, so its bytes never pass through us.

Signals: before the spawn, the caller blocks the signals we relay (`block_signals`), so none is
lost between the spawn and the wait and none kills us with work unfinished; `wait_direct`
then takes them one by one with `sigwaitinfo`. A signal the terminal sent to the whole
foreground job (Ctrl-C) already reached Claude; one sent to us alone (`kill -TERM <happy>`) is
passed on. Only light modules are imported here: this runs before Claude is spawned.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from typing import NamedTuple

# Relayed to Claude when sent to us alone; SIGCHLD wakes the wait when Claude exits.
RELAYED = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT})
_WAITED = frozenset({*RELAYED, signal.SIGCHLD})
# Python ignores these itself, and an ignored disposition survives exec: give Claude the
# defaults a shell would (so `claude -p … | head` ends Claude as it would without us).
_DEFAULTED = (signal.SIGPIPE, signal.SIGXFSZ)
_SI_USER = 0  # si_code of a signal sent with kill(); the terminal's are SI_KERNEL


class DirectExit(NamedTuple):
    code: int  # shell-style: exit status, or 128+signal if Claude was killed by a signal
    signal: int | None  # the signal that killed Claude, if any
    received: int | None  # the last signal someone sent to happy itself (passed on to Claude)
    interrupted: bool  # a SIGINT reached Claude (from the terminal or relayed by us)


def block_signals() -> set[int]:
    """Block the signals `wait_direct` takes; returns the previous mask (for the child)."""
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED))


def spawn_direct(argv: Sequence[str], env: Mapping[str, str], child_mask: set[int]) -> int:
    """Start `argv` (argv[0] a path) on our stdio, in our cwd; returns its pid."""
    return os.posix_spawn(argv[0], list(argv), dict(env), setsigmask=child_mask, setsigdef=_DEFAULTED)


def wait_direct(pid: int) -> DirectExit:
    """Relay signals to `pid` until it exits; its exit. Blocks: run it in a worker thread.

    The signals of `block_signals` must be blocked in every thread of the process."""
    received: int | None = None
    interrupted = False
    while True:
        info = signal.sigwaitinfo(_WAITED)
        sig = info.si_signo
        if sig == signal.SIGCHLD:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            continue
        interrupted = interrupted or sig == signal.SIGINT
        if info.si_code == _SI_USER and info.si_pid != pid:
            received = sig
            with contextlib.suppress(ProcessLookupError):  # exiting already: SIGCHLD is on the way
                os.kill(pid, sig)
    code = os.waitstatus_to_exitcode(status)
    killed_by = -code if code < 0 else None
    return DirectExit(
        code=128 + killed_by if killed_by else code,
        signal=killed_by,
        received=received,
        interrupted=interrupted,
    )
