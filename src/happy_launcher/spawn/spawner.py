"""Sessions started without a terminal (from the app through the daemon, or from the page): a
start is `happy claude --happy-remote` in an allowed directory (`dirs.py`), detached, its output
appended to a log in HAPPY_HOME_DIR (`spawned/`), recorded there too (`registry.py`). It is started
once its control socket answers with its session id: it can take a prompt; a first prompt goes
through the socket's `send` (so it is in the session's inbound ledger, never lost), under one
message id, so sending it again is a no-op. A stop is SIGTERM to happy (it closes the open turn
and ends Claude), SIGKILL to its process group after `stop_bound` seconds."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from happy_launcher.errors import ClaudeNotFoundError, ControlError
from happy_launcher.home.procs import ProcessId
from happy_launcher.spawn.dirs import SpawnRefused, place_for, read_settings
from happy_launcher.spawn.registry import SPAWNED_DIR, Registry, SpawnedEntry

_log = logging.getLogger(__name__)
START_BOUND = 25.0  # seconds for a started session to answer on its socket (happy-agent waits 30)
STOP_BOUND = 10.0  # seconds from SIGTERM to SIGKILL
POLL = 0.02  # seconds between two looks at a starting session
SEND_TRIES = 3
CLAUDE_MODES = ("acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan")


class NeedsCreation(Exception):
    """The directory does not exist; the request may ask again with `create=True`."""

    def __init__(self, directory: str) -> None:
        super().__init__(f"{directory} does not exist")
        self.directory = directory


@dataclass(frozen=True)
class SpawnRequest:
    directory: str
    create: bool = False  # the app's approvedNewDirectoryCreation
    prompt: str | None = None  # sent through the control socket once up, never on argv
    model: str | None = None
    permission_mode: str | None = None
    resume: str | None = None  # a Claude session id to continue (`--resume`)


@dataclass(frozen=True)
class Started:
    session_id: str  # our session id (the control socket's, the store's)
    pid: int
    log: Path


class Child(Protocol):
    pid: int

    async def wait(self) -> int: ...


class Launcher(Protocol):
    async def start(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path) -> Child: ...


class Processes(Protocol):
    def start_time(self, pid: int) -> int | None: ...

    def alive(self, owner: ProcessId) -> bool: ...

    def signal(self, owner: ProcessId, sig: int) -> None: ...

    async def gone(self, owner: ProcessId, within: float) -> bool:
        """Whether `owner` has ended (at most `within` seconds from now)."""
        ...


async def terminate(processes: Processes, owner: ProcessId, bound: float) -> bool:
    """SIGTERM to happy (it closes the open turn and ends Claude), SIGKILL to its group if it
    still runs `bound` seconds later. Whether SIGTERM was enough."""
    processes.signal(owner, signal.SIGTERM)
    if await processes.gone(owner, bound):
        return True
    processes.signal(owner, signal.SIGKILL)
    await processes.gone(owner, bound)
    return False


class Control(Protocol):
    async def ready(self, pid: int) -> str | None:
        """Its session id once its control socket answers with one; else None."""
        ...

    async def send(self, pid: int, message_id: str, text: str) -> None: ...


class Stored(Protocol):
    def find(self, session_id: str) -> tuple[str, str | None, bool] | None:
        """(cwd, Claude session id, running?) of one of the store's sessions."""
        ...


@dataclass(frozen=True)
class Ports:
    launcher: Launcher
    processes: Processes
    control: Control
    stored: Stored


class Spawner:
    def __init__(
        self,
        home: Path,
        env: Mapping[str, str],
        ports: Ports,
        find_claude: Callable[[], Path],
        *,
        start_bound: float = START_BOUND,
        stop_bound: float = STOP_BOUND,
    ) -> None:
        self._home = home
        self._env = env
        self._ports = ports
        self._find_claude = find_claude
        self._start_bound = start_bound
        self._stop_bound = stop_bound
        self.registry = Registry(home, ports.processes.alive)
        self._tg: TaskGroup | None = None

    async def run(self) -> None:
        """Until cancelled: reaps the children this spawner started as they end."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await anyio.sleep_forever()

    async def start(self, request: SpawnRequest) -> Started:
        async with self.registry.exclusive():
            child, entry, log = await self._launch(request)
        ended = anyio.Event()
        assert self._tg is not None, "Spawner.run is not running"
        self._tg.start_soon(self._reap, child, entry, ended)
        try:
            session_id = await self._until_ready(child.pid, ended, log)
            if request.prompt is not None:
                await self._first_prompt(entry, request.prompt)
        except SpawnRefused:
            self._ports.processes.signal(entry.owner, signal.SIGKILL)  # never a stray half-started one
            raise
        self.registry.named(entry, session_id)
        return Started(session_id, child.pid, log)

    async def _launch(self, request: SpawnRequest) -> tuple[Child, SpawnedEntry, Path]:
        """Checked (limit, directory, Claude), started and recorded: under the registry's lock."""
        settings = await anyio.to_thread.run_sync(read_settings, self._home, Path.home())
        running = await anyio.to_thread.run_sync(self.registry.live)
        if len(running) >= settings.limit:
            raise SpawnRefused(
                f"limit reached: {len(running)} sessions started without a terminal run on this machine "
                f"(at most {settings.limit}); stop one first"
            )
        where = partial(place_for, request.directory, settings.allowed, create=request.create)
        place = await anyio.to_thread.run_sync(where)
        if place.kind == "ask":
            raise NeedsCreation(request.directory)
        try:
            self._find_claude()
        except ClaudeNotFoundError as missing:
            raise SpawnRefused(f"Claude missing: {missing}") from None
        argv = [sys.executable, "-m", "happy_launcher", "claude", "--happy-remote", *_options(request)]
        log = self._home / SPAWNED_DIR / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}.log"
        child = await self._ports.launcher.start(argv, place.path, self._env, log)
        start = self._ports.processes.start_time(child.pid)
        entry = SpawnedEntry(
            child.pid, start, str(log), model=request.model, permission_mode=request.permission_mode
        )
        self.registry.add(entry)
        return child, entry, log

    async def resume(
        self, session_id: str, *, model: str | None = None, permission_mode: str | None = None
    ) -> Started:
        """An ended session of the store (our id) goes on: Claude resumes its conversation in its
        directory (the same session of ours, issue 16)."""
        found = await anyio.to_thread.run_sync(self._ports.stored.find, session_id)
        if found is None:
            raise SpawnRefused(f"no session {session_id} on this machine")
        cwd, claude_id, running = found
        if running:
            raise SpawnRefused(f"session {session_id} is running: there is nothing to resume")
        if claude_id is None:
            raise SpawnRefused(
                f"session {session_id} never reached Claude: there is no conversation to resume"
            )
        request = SpawnRequest(cwd, model=model, permission_mode=permission_mode, resume=claude_id)
        try:
            return await self.start(request)
        except NeedsCreation:
            raise SpawnRefused(f"the directory of session {session_id} is gone: {cwd}") from None

    async def stop(self, session_id: str) -> bool:
        """End a session started without a terminal (by anyone); False if there is none such."""
        entry = await anyio.to_thread.run_sync(self.registry.find, session_id)
        if entry is None:
            return False
        began = time.monotonic()
        if await terminate(self._ports.processes, entry.owner, self._stop_bound):
            _log.info("session %s stopped in %.1f s", session_id, time.monotonic() - began)
        else:
            _log.warning("session %s still ran %.0f s after SIGTERM: killed", session_id, self._stop_bound)
        self.registry.remove(entry)
        return True

    async def _until_ready(self, pid: int, ended: anyio.Event, log: Path) -> str:
        with anyio.move_on_after(self._start_bound):
            while not ended.is_set():
                session_id = await self._ports.control.ready(pid)
                if session_id is not None:
                    return session_id
                with anyio.move_on_after(POLL):
                    await ended.wait()
            raise SpawnRefused(f"the session ended as it started: {_last_line(log)} (log: {log})")
        bound = f"{self._start_bound:.0f} s"
        raise SpawnRefused(f"the session did not answer on its control socket within {bound} (log: {log})")

    async def _first_prompt(self, entry: SpawnedEntry, prompt: str) -> None:
        message_id = f"spawn-{entry.pid}-{entry.start}"  # the same on each try: a resend is a no-op
        for attempt in range(1, SEND_TRIES + 1):
            try:
                await self._ports.control.send(entry.pid, message_id, prompt)
            except ControlError as exc:
                if attempt == SEND_TRIES:
                    raise SpawnRefused(
                        f"the session started but did not take its first prompt: {exc}"
                    ) from None
            else:
                return

    async def _reap(self, child: Child, entry: SpawnedEntry, ended: anyio.Event) -> None:
        await child.wait()  # cancelled (the spawner stops): it runs on, its entry kept
        ended.set()
        self.registry.remove(entry)


def spawner_for(home: Path, env: Mapping[str, str]) -> Spawner:
    """The real one: processes, sockets and the store of `home`; Claude as `env` finds it."""
    from happy_launcher.claude.binary import find_claude
    from happy_launcher.spawn.system import Processes, ProcessLauncher, SocketControl, StoredSessions

    ports = Ports(ProcessLauncher(), Processes(), SocketControl(home), StoredSessions(home))
    return Spawner(home, env, ports, partial(find_claude, env))


def _options(request: SpawnRequest) -> list[str]:
    mode = request.permission_mode
    if mode is not None and mode != "default" and mode not in CLAUDE_MODES:
        raise SpawnRefused(f"permission mode {mode!r} is not one of {', '.join(CLAUDE_MODES)}")
    options = claude_options(mode, request.model)
    if request.resume is not None:
        options += ["--resume", request.resume]
    return options


def claude_options(permission_mode: str | None, model: str | None) -> list[str]:
    """A run's permission mode and model as `happy claude` options (Claude's default mode: none)."""
    mode = ["--permission-mode", permission_mode] if permission_mode not in (None, "default") else []
    return [*mode, *(["--model", model] if model else [])]


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1] if lines else "no output"
