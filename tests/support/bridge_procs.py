"""The bridges the tests start, found by their processes (`python -m happy_launcher.bridge.process.daemon_run`
with a HAPPY_HOME_DIR under a test's directory), so a test's teardown stops them even before one
has written its daemon.pid."""

from __future__ import annotations

import contextlib
import os
import select
import signal
from pathlib import Path


def stop_bridges(root: Path, bound: float = 10.0) -> list[int]:
    """Stop every bridge (`happy_launcher.bridge.process.daemon_run`) whose HAPPY_HOME_DIR is `root` or
    under it, found in /proc (so also one spawned whose daemon.pid is not written yet): SIGTERM,
    SIGKILL after `bound` s. Their pids."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            handle = os.pidfd_open(int(entry.name))  # held: the pid cannot be reused meanwhile
        except OSError:
            continue
        try:
            if _bridge_home_under(entry, root):
                found.append(int(entry.name))
                _end(handle, bound)
        finally:
            os.close(handle)
    return found


def _bridge_home_under(proc: Path, root: Path) -> bool:
    try:
        argv = (proc / "cmdline").read_bytes().split(b"\0")
        env = (proc / "environ").read_bytes().split(b"\0")
    except OSError:  # gone, or not ours
        return False
    if argv[1:3] != [
        b"-m",
        b"happy_launcher.bridge.process.daemon_run",
    ]:  # as bridge/process/daemon.py spawns it
        return False
    homes = [Path(os.fsdecode(v.split(b"=", 1)[1])) for v in env if v.startswith(b"HAPPY_HOME_DIR=")]
    return any(home == root or root in home.parents for home in homes)


def _end(handle: int, bound: float) -> None:
    for sig, wait in ((signal.SIGTERM, bound), (signal.SIGKILL, bound)):
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(handle, sig)
        if select.select([handle], [], [], wait)[0]:
            return
    raise AssertionError("a bridge did not exit, even on SIGKILL")
