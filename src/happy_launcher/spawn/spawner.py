"""Sessions the app starts on this machine (`spawn-happy-session`) and stops (`stop-session`).

A spawn is `happy claude --happy-remote` in the requested directory (judged by `spawn_dirs.py`),
in its own session (no terminal: no terminal's signal reaches it), its output appended to a log
in HAPPY_HOME_DIR (`spawned/`). Without a terminal, remote mode reads prompts from stdin and ends
at its end: its stdin is a pipe whose write end the child itself holds, so it runs until stopped,
whether or not the bridge does. The answer is its Happy session id once sessions-out has linked it
(`linked`, told with its pid), or why not, in words. A stop is SIGTERM to happy (it closes the
open turn and ends Claude), SIGKILL to its process group after `stop_bound` seconds."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from happy_launcher.errors import ClaudeNotFoundError
from happy_launcher.spawn.dirs import SpawnRefused, place_for, read_settings

LINK_BOUND = 25.0  # seconds for a spawned session to be linked (happy-agent waits 30)
STOP_BOUND = 10.0  # seconds from SIGTERM to SIGKILL
SPAWNED_DIR = "spawned"
_CLAUDE_MODES = ("acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan")


class Child(Protocol):
    pid: int

    async def wait(self) -> int: ...

    def signal(self, sig: int) -> None:
        """To the child (SIGTERM) or its whole process group (SIGKILL)."""
        ...


class Launcher(Protocol):
    async def start(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path) -> Child: ...


class ProcessChild:
    def __init__(self, process: anyio.abc.Process) -> None:
        self._process = process
        self.pid = process.pid

    async def wait(self) -> int:
        return await self._process.wait()

    def signal(self, sig: int) -> None:
        try:
            if sig == signal.SIGKILL:
                os.killpg(self.pid, sig)  # Claude and its tools too
            else:
                os.kill(self.pid, sig)
        except ProcessLookupError:
            pass  # gone meanwhile


class ProcessLauncher:
    async def start(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path) -> Child:
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


@dataclass
class _Spawned:
    child: Child
    ended: anyio.Event = field(default_factory=anyio.Event)
    happy_id: str | None = None
    linked: anyio.Event = field(default_factory=anyio.Event)


class Spawner:
    def __init__(
        self,
        home: Path,
        env: Mapping[str, str],
        launcher: Launcher,
        find_claude: Callable[[], Path],
        *,
        link_bound: float = LINK_BOUND,
        stop_bound: float = STOP_BOUND,
    ) -> None:
        self._home = home
        self._env = env
        self._launcher = launcher
        self._find_claude = find_claude
        self._link_bound = link_bound
        self._stop_bound = stop_bound
        self._running: dict[int, _Spawned] = {}
        self._tg: TaskGroup | None = None

    async def run(self) -> None:
        """Until cancelled: reaps the children as they end."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await anyio.sleep_forever()

    def linked(self, pid: int | None, happy_id: str) -> None:
        spawned = self._running.get(pid) if pid is not None else None
        if spawned is not None:
            spawned.happy_id = happy_id
            spawned.linked.set()

    async def spawn(self, params: dict[str, Any]) -> dict[str, Any]:
        """Happy's answer to `spawn-happy-session`."""
        try:
            return await self._spawn(params)
        except SpawnRefused as refused:
            return {"type": "error", "errorMessage": str(refused)}

    async def stop(self, happy_id: str) -> bool:
        """End the session this machine spawned as `happy_id`; False if it spawned none such."""
        spawned = next((s for s in self._running.values() if s.happy_id == happy_id), None)
        if spawned is None:
            return False
        spawned.child.signal(signal.SIGTERM)
        with anyio.move_on_after(self._stop_bound):
            await spawned.ended.wait()
            return True
        spawned.child.signal(signal.SIGKILL)
        await spawned.ended.wait()
        return True

    async def _spawn(self, params: dict[str, Any]) -> dict[str, Any]:
        directory, options = _request(params)
        settings = await anyio.to_thread.run_sync(read_settings, self._home, Path.home())
        if len(self._running) >= settings.limit:
            raise SpawnRefused(
                f"limit reached: {len(self._running)} sessions started from the app run on this machine "
                f"(at most {settings.limit}); stop one first"
            )
        create = params.get("approvedNewDirectoryCreation") is True
        place = await anyio.to_thread.run_sync(lambda: place_for(directory, settings.allowed, create=create))
        if place.kind == "ask":
            return {"type": "requestToApproveDirectoryCreation", "directory": directory}
        try:
            self._find_claude()
        except ClaudeNotFoundError as missing:
            raise SpawnRefused(f"Claude missing: {missing}") from None
        argv = [sys.executable, "-m", "happy_launcher", "claude", "--happy-remote", *options]
        log = self._home / SPAWNED_DIR / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}.log"
        spawned = _Spawned(await self._launcher.start(argv, place.path, self._env, log))
        self._running[spawned.child.pid] = spawned
        assert self._tg is not None, "Spawner.run is not running"
        self._tg.start_soon(self._reap, spawned)
        return await self._answer(spawned, log)

    async def _answer(self, spawned: _Spawned, log: Path) -> dict[str, Any]:
        with anyio.move_on_after(self._link_bound):
            async with anyio.create_task_group() as tg:
                for event in (spawned.linked, spawned.ended):
                    tg.start_soon(_then_cancel, event, tg.cancel_scope)
        if spawned.happy_id is not None:
            return {"type": "success", "sessionId": spawned.happy_id}
        if spawned.ended.is_set():
            raise SpawnRefused(f"the session ended as it started: {_last_line(log)} (log: {log})")
        bound = f"{self._link_bound:.0f} s"
        raise SpawnRefused(f"the session did not reach the server within {bound} (log: {log})")

    async def _reap(self, spawned: _Spawned) -> None:
        try:
            await spawned.child.wait()
        finally:
            del self._running[spawned.child.pid]
            spawned.ended.set()


def _request(params: dict[str, Any]) -> tuple[str, list[str]]:
    """The directory asked for and happy's options for what the app asked (Claude only)."""
    directory = params.get("directory")
    if not isinstance(directory, str) or not directory:
        raise SpawnRefused("no directory given")
    agent = params.get("agent")
    if agent not in (None, "claude"):
        raise SpawnRefused(f"this machine starts Claude sessions only, not {agent}")
    options: list[str] = []
    mode = params.get("permissionMode")
    if mode is not None and mode != "default":
        if mode not in _CLAUDE_MODES:
            raise SpawnRefused(f"permission mode {mode!r} is not one of {', '.join(_CLAUDE_MODES)}")
        options += ["--permission-mode", str(mode)]
    model = params.get("modelMode")
    if isinstance(model, str) and model and model != "default":
        options += ["--model", model]
    return directory, options


async def _then_cancel(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1] if lines else "no output"
