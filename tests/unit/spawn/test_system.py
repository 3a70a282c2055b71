"""The real process port: a stop waits on the process itself (a pidfd), not on a poll."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest

from happy_launcher.home.procs import ProcessId, start_time
from happy_launcher.spawn.system import Processes

pytestmark = pytest.mark.anyio
READER = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # runs until its stdin ends


async def test_gone_waits_for_the_process_to_end() -> None:
    async with await anyio.open_process(READER, stdin=subprocess.PIPE) as child:
        owner = ProcessId(child.pid, start_time(child.pid))
        processes = Processes()
        assert not await processes.gone(owner, 0.05)  # still reading its stdin
        assert child.stdin is not None
        await child.stdin.aclose()  # it ends
        assert await processes.gone(owner, 10.0)


async def test_a_pid_now_of_another_process_is_gone_at_once() -> None:
    async with await anyio.open_process(READER, stdin=subprocess.PIPE) as child:
        start = start_time(child.pid)
        assert start is not None
        assert await Processes().gone(ProcessId(child.pid, start - 1), 10.0)
        assert child.stdin is not None
        await child.stdin.aclose()
