"""Which process owns a session, and whether it still runs: a pid plus the kernel's start time of
that pid, so that a recycled pid is never mistaken for the launcher that once had it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_STARTTIME_FIELD = 21  # 0-based index of `starttime` in /proc/<pid>/stat (fields after the comm)


@dataclass(frozen=True, slots=True)
class ProcessId:
    pid: int
    start: int | None  # clock ticks after boot; None where /proc is unavailable


def start_time(pid: int, proc: Path = _PROC) -> int | None:
    """The start time of `pid`, or None if there is no such process (or no /proc)."""
    try:
        stat = (proc / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The comm field is in parentheses and may itself hold spaces or parentheses.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[_STARTTIME_FIELD - 2])
    except (IndexError, ValueError):
        return None


def this_process(pid: int, proc: Path = _PROC) -> ProcessId:
    return ProcessId(pid, start_time(pid, proc))


def is_alive(owner: ProcessId, proc: Path = _PROC) -> bool:
    """Whether the process `owner` names is still running (not merely its pid)."""
    now = start_time(owner.pid, proc)
    if now is None:
        return running(owner.pid, proc)
    return owner.start is None or owner.start == now


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
