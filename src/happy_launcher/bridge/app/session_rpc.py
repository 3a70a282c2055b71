"""The RPCs the app calls on a session (`<happy session id>:<name>`, parameters and result sealed
with the session's cipher), answered through the session's control socket, where the first
answer wins as it does for every other client:

- `permission {id, approved, reason?, decision?, allowTools?}`: allow, deny with a reason,
  `abort` (deny, then abort the turn), `approved_for_session` (allow, and allow the same tools
  without asking for the rest of the session, as Happy's CLI does);
- `abort {reason?}`; `switch {to}` (True once the session took the request: it hands over
  after the answer); `killSession` (the run
  ends: SIGTERM to happy, which ends the open turn and passes the signal to Claude)."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ValidationError

from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.errors import DecryptError, HappyError

_log = logging.getLogger(__name__)
RPC_NAMES = ("permission", "abort", "switch", "killSession")


class PermissionParams(BaseModel):
    id: str
    approved: bool
    reason: str | None = None
    decision: Literal["approved", "approved_for_session", "denied", "abort"] | None = None
    allowTools: list[str] | None = None  # the app's field name


class SwitchParams(BaseModel):
    to: Literal["local", "remote"]


@dataclass(frozen=True, slots=True)
class Target:
    """A session the app can call: how to reach it, and how its calls are sealed."""

    session: str
    cipher: SessionCipher
    socket: Path | None  # its control socket; None when it does not run
    pid: int | None  # happy's process, for killSession


class Control(Protocol):
    """The control verbs the RPCs use (the real ones: `control.client` on the socket)."""

    async def answer(self, socket: Path, request_id: str, allow: bool, message: str | None) -> None: ...

    async def abort(self, socket: Path) -> None: ...

    async def switch(self, socket: Path, to: Literal["local", "remote"]) -> None: ...

    async def mode(self, socket: Path) -> str:
        """Where the session runs now (`status`): local, remote or headless."""
        ...


def rpc_methods(happy_id: str) -> list[str]:
    return [f"{happy_id}:{name}" for name in RPC_NAMES]


Switched = Callable[[str, Literal["local", "remote"]], Awaitable[None]]


async def _unheard(session: str, to: Literal["local", "remote"]) -> None:
    return None


class SessionRpc:
    """Dispatches the app's calls. `allow_tools(session, tools)`: the session's permissions
    remember tools allowed for the rest of the session; `switched(session, to)`: told before
    the answer to a switch the session took."""

    def __init__(
        self,
        find: Callable[[str], Target | None],
        control: Control,
        allow_tools: Callable[[str, Sequence[str]], None],
        kill: Callable[[int, int], None] = os.kill,
        switched: Switched = _unheard,
        denied: Callable[[str, str, str], None] = lambda session, request_id, reason: None,
    ) -> None:
        self._find = find
        self._control = control
        self._allow_tools = allow_tools
        self._kill = kill
        self._switched = switched
        self._denied = denied  # (session, request id, reason): shown in completedRequests

    async def call(self, method: str, params: str) -> str | None:
        """The sealed result of `method`; None for a session unknown here (nothing to seal with)."""
        happy_id, _, name = method.rpartition(":")
        target = self._find(happy_id)
        if target is None:
            return None
        try:
            result = await self._dispatch(target, name, target.cipher.open(params))
        except (DecryptError, ValidationError):
            result = {"error": "the request is not one this session understands"}
        except HappyError as exc:
            result = {"error": str(exc)}
        return target.cipher.seal(result)

    async def _dispatch(self, target: Target, name: str, params: Any) -> Any:
        if name == "killSession":
            if target.pid is None:
                return {"success": False, "message": "the session is not running"}
            self._kill(target.pid, signal.SIGTERM)
            return {"success": True}
        socket = target.socket
        if socket is None:
            return {"error": "the session is not running"}
        if name == "permission":
            return await self._permission(target, socket, PermissionParams.model_validate(params))
        if name == "abort":
            await self._control.abort(socket)
            return None
        if name == "switch":
            to = SwitchParams.model_validate(params).to
            await self._control.switch(socket, to)
            await self._switched(target.session, to)
            return True
        return {"error": "Method not found"}

    async def _permission(self, target: Target, socket: Path, p: PermissionParams) -> None:
        if p.approved and p.decision == "approved_for_session" and p.allowTools:
            self._allow_tools(target.session, p.allowTools)
        message = None if p.approved else (p.reason or "denied from the Happy app")
        if message is not None:
            self._denied(target.session, p.id, message)
        await self._control.answer(socket, p.id, p.approved, message)
        if p.decision == "abort":
            await self._control.abort(socket)


class SocketControl:
    """The real `Control`: one control connection per call."""

    async def answer(self, socket: Path, request_id: str, allow: bool, message: str | None) -> None:
        from happy_launcher.control.client import connect

        async with connect(socket) as client:
            await client.answer(request_id, allow, message)

    async def abort(self, socket: Path) -> None:
        from happy_launcher.control.client import connect

        async with connect(socket) as client:
            await client.abort()

    async def switch(self, socket: Path, to: Literal["local", "remote"]) -> None:
        from happy_launcher.control.client import connect

        async with connect(socket) as client:
            await client.switch(to)

    async def mode(self, socket: Path) -> str:
        from happy_launcher.control.client import connect

        async with connect(socket) as client:
            return (await client.status()).session.mode
