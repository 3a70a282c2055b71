"""Permission requests of a remote session (design §4): Claude asks (`can_use_tool`), the request
waits on the session until someone answers it — the terminal's remote screen, a script through
the Python API, later any attached client — and the first answer wins. With nobody answering,
a configurable timeout denies."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from happy_launcher.claude.titles import tool_title

_log = logging.getLogger(__name__)
DEFAULT_TIMEOUT = 300.0  # seconds a request waits for an answer before it is denied


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    id: str
    tool: str
    input: dict[str, Any]
    title: str  # by the mapper's title rules (the Bash command, the file path, …)
    tool_use_id: str | None = None


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """`allow`, or deny with `message` (Claude sees it); `stop` also interrupts the turn."""

    allow: bool
    message: str = ""
    stop: bool = False
    updated_input: dict[str, Any] | None = None


class PermissionListener(Protocol):
    def requested(self, request: PermissionRequest) -> None: ...

    def settled(self, request_id: str, answer: PermissionAnswer) -> None: ...


@dataclass
class _Pending:
    request: PermissionRequest
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: PermissionAnswer | None = None


class PermissionBroker:
    """The session's pending permission requests. `ask` waits for the first `answer`."""

    def __init__(self, new_id: Callable[[], str], *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self._new_id = new_id
        self.timeout = timeout
        self._pending: dict[str, _Pending] = {}
        self._listeners: list[PermissionListener] = []

    @property
    def pending(self) -> list[PermissionRequest]:
        """Unanswered requests, oldest first."""
        return [p.request for p in self._pending.values()]

    def listen(self, listener: PermissionListener) -> Callable[[], None]:
        """Be told of each new request (and of those already pending) and of each answer."""
        self._listeners.append(listener)
        for pending in list(self._pending.values()):
            listener.requested(pending.request)
        return lambda: self._listeners.remove(listener)

    async def ask(
        self, tool: str, tool_input: dict[str, Any], tool_use_id: str | None = None
    ) -> PermissionAnswer:
        title, _ = tool_title(tool, tool_input)
        request = PermissionRequest(self._new_id(), tool, dict(tool_input), title, tool_use_id)
        pending = self._pending[request.id] = _Pending(request)
        self._tell(lambda listener: listener.requested(request))
        try:
            with anyio.move_on_after(self.timeout):
                await pending.done.wait()
        finally:
            self._pending.pop(request.id, None)
        if pending.answer is not None:
            return pending.answer
        # Timed out (or cancelled: the turn is going away anyway).
        denied = PermissionAnswer(False, f"No answer to the permission request within {self.timeout:g} s")
        pending.answer = denied
        self._tell(lambda listener: listener.settled(request.id, denied))
        return denied

    def answer(self, request_id: str, answer: PermissionAnswer) -> bool:
        """Answer a pending request; False when it is unknown or already answered (first wins)."""
        pending = self._pending.get(request_id)
        if pending is None or pending.answer is not None:
            return False
        pending.answer = answer
        pending.done.set()
        self._tell(lambda listener: listener.settled(request_id, answer))
        return True

    def deny_all(self, message: str) -> None:
        """The session is going away: nothing stays waiting."""
        for request_id in list(self._pending):
            self.answer(request_id, PermissionAnswer(False, message))

    def _tell(self, call: Callable[[PermissionListener], None]) -> None:
        for listener in list(self._listeners):
            try:
                call(listener)
            except Exception:  # a broken viewer must not break the session
                _log.exception("a permission listener failed")
