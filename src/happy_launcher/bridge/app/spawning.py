"""The machine's session RPCs in Happy's terms: `spawn-happy-session` and `resume-happy-session`
answer with Happy's session id once sessions-out has linked the new run (`linked`), `stop-session`
takes Happy's id. Between them and the spawner (`spawn/spawner.py`, our session ids) stand the
links: ours -> Happy's as they are made, Happy's -> ours from them or, for a session linked by an
earlier run of the bridge, from the store."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio

from happy_launcher.spawn.dirs import SpawnRefused
from happy_launcher.spawn.spawner import NeedsCreation, SpawnRequest, Started

_log = logging.getLogger(__name__)
LINK_BOUND = 25.0  # seconds for a started session to be linked (happy-agent waits 30 in all)


class SpawnerPort(Protocol):
    """`spawn.spawner.Spawner`."""

    async def start(self, request: SpawnRequest) -> Started: ...

    async def resume(
        self, session_id: str, *, model: str | None = None, permission_mode: str | None = None
    ) -> Started: ...

    async def stop(self, session_id: str) -> bool: ...


class MachineSessions:
    def __init__(
        self,
        spawner: SpawnerPort,
        stored_session: Callable[[str], str | None],
        look_now: Callable[[], None],
        *,
        link_bound: float = LINK_BOUND,
    ) -> None:
        """`stored_session`: our session id of a Happy session id, from the store's links
        (blocking: it is run in a thread); `look_now`: sessions out, to take a new run up at once."""
        self._spawner = spawner
        self._look_now = look_now
        self._stored_session = stored_session
        self._link_bound = link_bound
        self._happy: dict[str, str] = {}  # our session id -> Happy's
        self._ours: dict[str, str] = {}  # Happy's -> ours
        self._runs: dict[str, int | None] = {}  # our session id -> the pid of its run last linked
        self._changed = anyio.Event()

    def linked(self, session: str, pid: int | None, happy_id: str) -> None:
        self._happy[session] = happy_id
        self._ours[happy_id] = session
        self._runs[session] = pid
        self._changed.set()
        self._changed = anyio.Event()

    async def spawn(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self._timed("spawned", lambda: self._spawner.start(spawn_request(params)))
        except NeedsCreation as missing:
            return {"type": "requestToApproveDirectoryCreation", "directory": missing.directory}
        except SpawnRefused as refused:
            return {"type": "error", "errorMessage": str(refused)}

    async def resume(self, params: dict[str, Any]) -> dict[str, Any]:
        happy_id = _text(params, "sessionId")
        session = None if happy_id is None else await self._session_of(happy_id)
        if session is None:
            return {"type": "error", "errorMessage": f"{happy_id} is not a session of this machine"}
        model, mode = _text(params, "model"), _text(params, "permissionMode")
        try:
            return await self._timed(
                "resumed", lambda: self._spawner.resume(session, model=model, permission_mode=mode)
            )
        except SpawnRefused as refused:
            return {"type": "error", "errorMessage": str(refused)}

    async def stop(self, happy_id: str) -> bool:
        session = await self._session_of(happy_id)
        return session is not None and await self._spawner.stop(session)

    async def _session_of(self, happy_id: str) -> str | None:
        if happy_id in self._ours:
            return self._ours[happy_id]
        return await anyio.to_thread.run_sync(self._stored_session, happy_id)

    async def _timed(self, what: str, start: Callable[[], Awaitable[Started]]) -> dict[str, Any]:
        """The start, then its link; how long each took in the log (`scripts/bench_spawn` reads it)."""
        began = time.perf_counter()
        started = await start()
        up = time.perf_counter()
        self._look_now()
        answer = await self._linked(started)
        done = time.perf_counter()
        _log.info(
            "%s session %s: its socket answered in %.0f ms, linked as %s in %.0f ms",
            what, started.session_id, (up - began) * 1000, answer["sessionId"], (done - began) * 1000,
        )  # fmt: skip
        return answer

    async def _linked(self, started: Started) -> dict[str, Any]:
        """Happy's id of the run just started, once sessions-out has linked it."""
        with anyio.move_on_after(self._link_bound):
            while self._runs.get(started.session_id, -1) != started.pid:
                await self._changed.wait()
            return {"type": "success", "sessionId": self._happy[started.session_id]}
        raise SpawnRefused(
            f"session {started.session_id} started but did not reach the server within "
            f"{self._link_bound:.0f} s (log: {started.log})"
        )


def spawn_request(params: dict[str, Any]) -> SpawnRequest:
    """The app's `spawn-happy-session` params (and our `prompt`) as a request; Claude only."""
    directory = params.get("directory")
    if not isinstance(directory, str) or not directory:
        raise SpawnRefused("no directory given")
    agent = params.get("agent")
    if agent not in (None, "claude"):
        raise SpawnRefused(f"this machine starts Claude sessions only, not {agent}")
    model = _text(params, "modelMode")
    return SpawnRequest(
        directory,
        create=params.get("approvedNewDirectoryCreation") is True,
        prompt=_text(params, "prompt"),
        model=None if model == "default" else model,
        permission_mode=_text(params, "permissionMode"),
        resume=_text(params, "resumeClaudeSessionId"),
    )


def _text(params: dict[str, Any], key: str) -> str | None:
    value = params.get(key)
    return value if isinstance(value, str) and value else None
