"""The real parts the spawner works through (each a Protocol in `spawner.py`, faked in tests):
the detached process, signals by pid and start time, a session's control socket, the store."""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import anyio.abc

from happy_launcher.control.client import connect
from happy_launcher.errors import ControlError
from happy_launcher.home.dirs import socket_path
from happy_launcher.home.procs import ProcessId, is_alive, start_time
from happy_launcher.store.sessions import DB_NAME, SessionStore

READY_WITHIN = 1.0  # seconds a starting session has to answer `hello` before it is asked again


class ProcessChild:
    def __init__(self, process: anyio.abc.Process) -> None:
        self._process = process
        self.pid = process.pid

    async def wait(self) -> int:
        return await self._process.wait()


class ProcessLauncher:
    """`argv` in its own session (no terminal: no terminal's signal reaches it), output appended
    to `log`. Without a terminal, remote mode reads prompts from stdin and ends at its end: its
    stdin is a pipe whose write end the child itself holds, so it runs until stopped."""

    async def start(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path) -> ProcessChild:
        log.parent.mkdir(mode=0o700, exist_ok=True)
        read, write = os.pipe()
        out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            process = await anyio.open_process(
                list(argv), stdin=read, stdout=out, stderr=out, cwd=cwd, env=env,
                start_new_session=True, pass_fds=(write,),
            )  # fmt: skip
        finally:
            for fd in (read, write, out):
                os.close(fd)
        return ProcessChild(process)


class Processes:
    def start_time(self, pid: int) -> int | None:
        return start_time(pid)

    def alive(self, owner: ProcessId) -> bool:
        return is_alive(owner)

    def signal(self, owner: ProcessId, sig: int) -> None:
        """SIGTERM to happy (it closes the open turn and ends Claude); SIGKILL to its whole group
        (Claude and its tools too). Never to a process that merely reuses the pid."""
        if not is_alive(owner):
            return
        try:
            if sig == signal.SIGKILL:
                os.killpg(owner.pid, sig)
            else:
                os.kill(owner.pid, sig)
        except ProcessLookupError:
            pass  # gone meanwhile

    async def gone(self, owner: ProcessId, within: float) -> bool:
        """Waits on a pidfd (readable once the process has exited): perhaps not our child, so
        there is no wait() to use."""
        try:
            fd = os.pidfd_open(owner.pid)
        except ProcessLookupError:
            return True
        try:
            if not is_alive(owner):  # checked with the fd held: the pid cannot be reused now
                return True
            with anyio.move_on_after(within):
                await anyio.wait_readable(fd)
                return True
            return False
        finally:
            os.close(fd)


class SocketControl:
    def __init__(self, home: Path) -> None:
        self._home = home

    async def ready(self, pid: int) -> str | None:
        path = socket_path(self._home, pid)
        if not path.exists():
            return None
        try:
            async with connect(path, within=READY_WITHIN) as client:
                return (await client.hello()).session.happy_session_id
        except ControlError:
            return None  # not listening yet

    async def send(self, pid: int, message_id: str, text: str) -> None:
        async with connect(socket_path(self._home, pid)) as client:
            await client.send(message_id, text)


class StoredSessions:
    def __init__(self, home: Path) -> None:
        self._home = home

    def find(self, session_id: str) -> tuple[str, str | None, bool] | None:
        """(cwd, Claude session id, running?) of one of the store's sessions."""
        if not (self._home / DB_NAME).exists():
            return None
        store = SessionStore.open(self._home)
        try:
            summary = next((s for s in store.session_summaries() if s.info.id == session_id), None)
        finally:
            store.close()
        if summary is None:
            return None
        owner, info = summary.owner, summary.info
        running = info.status == "running" and owner is not None and is_alive(owner)
        return info.cwd, info.claude_session_id, running
