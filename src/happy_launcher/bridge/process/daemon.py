"""The bridge's process: one per HAPPY_HOME_DIR, named by `daemon.pid` (its pid and the kernel's
start time of that pid, as home/procs.py tells a process, so a reused pid is never taken for it),
started detached (its own session, no terminal, stdout and stderr to `daemon.log`), stopped by
SIGTERM. Light to import: `happy claude` starts it through here, before Claude starts.

The child is `python -m happy_launcher.bridge.process.daemon_run` with this interpreter: it
needs no `happy` on PATH and runs the very sources (and PYTHONPATH) of the process that starts it."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from happy_launcher.errors import DaemonError
from happy_launcher.home.dirs import HOME_ENV, ensure_home
from happy_launcher.home.files import write_private
from happy_launcher.home.procs import ProcessId, is_alive

PID_FILE = "daemon.pid"
LOG_FILE = "daemon.log"
LOCK_FILE = "daemon.lock"
READY = b"ready\n"  # what the bridge writes on its ready fd once it knows its first state
READY_FD = 3  # the ready pipe's number in the child
START_BOUND = 20.0  # seconds `happy daemon start` waits for the first state (one HTTP call, bounded)
STOP_BOUND = 10.0  # seconds for a SIGTERM to end it before SIGKILL
KILL_BOUND = 5.0
_POLL = 0.05  # seconds between looks at /proc where no pidfd can be had (old kernels, seccomp)


@dataclass(frozen=True)
class Started:
    pid: int
    already: bool  # another bridge was running (or won the race to start)
    settled: bool = True  # it reported its first state within the bound


def read_pid_file(home: Path) -> ProcessId | None:
    """What daemon.pid names; None if there is none, or it is not ours (unreadable, damaged)."""
    try:
        body = json.loads((home / PID_FILE).read_bytes())
        pid, start = body["pid"], body["start"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(pid, int) or not (start is None or isinstance(start, int)):
        return None
    return ProcessId(pid, start)


def write_pid_file(home: Path, owner: ProcessId) -> None:
    write_private(home / PID_FILE, json.dumps({"pid": owner.pid, "start": owner.start}).encode())


def remove_pid_file(home: Path, owner: ProcessId) -> None:
    """Remove daemon.pid if it still names `owner` (never another bridge's)."""
    if read_pid_file(home) == owner:
        with contextlib.suppress(FileNotFoundError):
            (home / PID_FILE).unlink()


def running(home: Path) -> ProcessId | None:
    """The bridge running for `home`, if any: daemon.pid naming a live process with its start time."""
    owner = read_pid_file(home)
    return owner if owner is not None and is_alive(owner) else None


def start_detached(home: Path, env: Mapping[str, str]) -> int | None:
    """Start a bridge for `home` unless one runs, without waiting for it; its pid, if started.
    Two started at once are harmless: the second finds the first's lock and exits."""
    if running(home) is not None:
        return None
    return spawn(home, env)


def start(home: Path, env: Mapping[str, str], *, bound: float = START_BOUND) -> Started:
    """Start a bridge for `home` and wait (at most `bound` s) until it reports its first state.
    DaemonError, naming the log, if it dies first."""
    owner = running(home)
    if owner is not None:
        return Started(owner.pid, already=True)
    ready, ready_w = os.pipe()
    try:
        pid = spawn(home, env, ready=ready_w)
    finally:
        os.close(ready_w)  # the child's copy is the only one left: EOF when it exits
    try:
        said = _read_until_eof(ready, bound)
    finally:
        os.close(ready)
    if said is None:
        return Started(pid, already=False, settled=False)
    if said.startswith(READY):
        return Started(pid, already=False)
    other = running(home)  # it exited: another bridge held the lock, or it failed
    if other is not None:
        return Started(other.pid, already=True)
    raise DaemonError(f"the bridge did not start: see {home / LOG_FILE}")


def spawn(home: Path, env: Mapping[str, str], *, ready: int | None = None) -> int:
    """The bridge (`daemon_run`) in its own session (no terminal, so no terminal's signal reaches it), stdin
    /dev/null, stdout and stderr appended to daemon.log; `ready`: its ready pipe (as READY_FD)."""
    argv = [sys.executable, "-m", "happy_launcher.bridge.process.daemon_run"]
    ensure_home(home)
    log = os.open(home / LOG_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            *_dup2(log, 1),
            *_dup2(log, 2),
        ]
        if ready is not None:
            argv += ["--ready-fd", str(READY_FD)]
            actions += _dup2(ready, READY_FD)
        child_env = {**env, HOME_ENV: str(home)}
        return os.posix_spawn(argv[0], argv, child_env, file_actions=actions, setsid=True, setsigmask=())
    finally:
        os.close(log)


def _dup2(fd: int, target: int) -> list[tuple[int, ...]]:
    if fd == target:  # dup2 onto itself keeps close-on-exec: make it inheritable instead
        os.set_inheritable(fd, True)
        return []
    return [(os.POSIX_SPAWN_DUP2, fd, target)]


def _read_until_eof(fd: int, bound: float) -> bytes | None:
    """What the child wrote on its ready pipe until it said READY or closed it; None after `bound`."""
    said = b""
    deadline = time.monotonic() + bound
    while not said.startswith(READY):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 64)
        if not chunk:
            break
        said += chunk
    return said


def stop(home: Path, *, bound: float = STOP_BOUND, kill_bound: float = KILL_BOUND) -> int | None:
    """SIGTERM to the bridge, SIGKILL if it has not exited after `bound` s; its pid, or None if
    none was running. A stale daemon.pid is removed either way."""
    owner = read_pid_file(home)
    if owner is None:
        return None
    stopped = _end(owner, bound, kill_bound)
    remove_pid_file(home, owner)  # what a bridge that was killed, or had died, left behind
    return owner.pid if stopped else None


def _end(owner: ProcessId, bound: float, kill_bound: float) -> bool:
    """Whether `owner` was running; it runs no more (or DaemonError)."""
    try:
        handle: int | None = os.pidfd_open(owner.pid)
    except ProcessLookupError:
        return False
    except OSError:  # no pidfds here: signal by pid (its identity checked just before)
        handle = None
    try:
        if not is_alive(owner):  # checked after the pidfd is held: the pidfd is that very process
            return False
        for sig, wait in ((signal.SIGTERM, bound), (signal.SIGKILL, kill_bound)):
            _signal(owner, handle, sig)
            if _wait_gone(owner, handle, wait):
                return True
        raise DaemonError(f"the bridge (pid {owner.pid}) did not exit, even on SIGKILL")
    finally:
        if handle is not None:
            os.close(handle)


def _signal(owner: ProcessId, handle: int | None, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it has just exited
        if handle is not None:
            signal.pidfd_send_signal(handle, sig)
        elif is_alive(owner):
            os.kill(owner.pid, sig)


def _wait_gone(owner: ProcessId, handle: int | None, bound: float) -> bool:
    """Wait (on the pidfd, readable once it exits; else looking at /proc) at most `bound` s."""
    deadline = time.monotonic() + bound
    while is_alive(owner):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if handle is not None:
            select.select([handle], [], [], left)
        else:
            time.sleep(min(left, _POLL))
    return True
