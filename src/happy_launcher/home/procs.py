"""Which process owns a session, and whether it still runs: a pid plus the kernel's start time of
that pid, so that a recycled pid is never mistaken for the launcher that once had it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

_PROC = Path("/proc")
_STATE_FIELD = 2  # 0-based indexes in /proc/<pid>/stat: `state`, `starttime`
_STARTTIME_FIELD = 21
# A process that has exited but is not reaped yet (or is being reaped) still has its /proc entry.
_GONE_STATES = frozenset({b"Z", b"X"})


class ProcessId(NamedTuple):
    pid: int
    start: int | None  # clock ticks after boot; None where /proc is unavailable


def start_time(pid: int, proc: Path = _PROC) -> int | None:
    """The start time of `pid`, or None if there is no such process (or no /proc)."""
    stat = _stat(pid, proc)
    return None if stat is None else stat[1]


def _stat(pid: int, proc: Path) -> tuple[bytes, int] | None:
    """`pid`'s state letter and start time, or None if there is no such process (or no /proc)."""
    try:
        stat = (proc / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The comm field is in parentheses and may itself hold spaces or parentheses.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return fields[_STATE_FIELD - 2], int(fields[_STARTTIME_FIELD - 2])
    except (IndexError, ValueError):
        return None


def this_process(pid: int, proc: Path = _PROC) -> ProcessId:
    return ProcessId(pid, start_time(pid, proc))


def is_alive(owner: ProcessId, proc: Path = _PROC) -> bool:
    """Whether the process `owner` names is still running (not merely its pid, nor a zombie
    that has exited and waits for its parent to reap it)."""
    stat = _stat(owner.pid, proc)
    if stat is None:
        return running(owner.pid, proc)
    state, now = stat
    return state not in _GONE_STATES and (owner.start is None or owner.start == now)


def running(pid: int, proc: Path = _PROC) -> bool:
    """Whether some process has this pid. Without /proc (some containers) ask the kernel: a
    live launcher must never be taken for a dead one."""
    if proc.is_dir():
        return (proc / str(pid)).exists()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
