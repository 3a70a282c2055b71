"""Permission requests of a session (design §4): Claude asks (remote mode: `can_use_tool`; local
mode: the TUI's PermissionRequest hook, `session/tui_permissions.py`), the request waits on the
session until someone answers it — the terminal's remote screen, a script through the Python API,
any control client — and the first answer wins. With nobody answering, remote mode's configurable
timeout denies; the TUI's requests have no timeout and are withdrawn instead (its dialog decides)."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from happy_launcher.claude.titles import tool_title
from happy_launcher.session.ports import (
    Origin,
    Outcome,
    PermissionAnswer,
    PermissionListener,
    PermissionRequest,
    outcome,
)

_log = logging.getLogger(__name__)
DEFAULT_TIMEOUT = 300.0  # seconds a request waits for an answer before it is denied
_KEPT_SETTLED = 64  # settled request ids remembered, to tell a late answer what happened


@dataclass
class _Pending:
    request: PermissionRequest
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: PermissionAnswer | None = None


class PermissionBroker:
    """The session's pending permission requests. `ask` waits for the first `answer`; `open` and
    `wait` do the same without the timeout's deny, and `withdraw` settles a request unanswered."""

    def __init__(self, new_id: Callable[[], str], *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self._new_id = new_id
        self.timeout = timeout
        self._pending: dict[str, _Pending] = {}
        self._settled: OrderedDict[str, Outcome] = OrderedDict()  # recent ids -> how (for refusals)
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
        request = self.open(tool, tool_input, tool_use_id=tool_use_id)
        # Timed out (or cancelled: the turn is going away anyway): denied.
        denied = PermissionAnswer(False, f"No answer to the permission request within {self.timeout:g} s")
        answer = await self.wait(request.id, self.timeout, unanswered=denied)
        return denied if answer is None else answer

    def open(
        self,
        tool: str,
        tool_input: dict[str, Any],
        *,
        tool_use_id: str | None = None,
        origin: Origin = "remote",
    ) -> PermissionRequest:
        """A new pending request, told to the listeners; `wait` for its answer."""
        title, _ = tool_title(tool, tool_input)
        request = PermissionRequest(self._new_id(), tool, dict(tool_input), title, tool_use_id, origin)
        self._pending[request.id] = _Pending(request)
        self._tell(lambda listener: listener.requested(request))
        return request

    async def wait(
        self, request_id: str, within: float | None, *, unanswered: PermissionAnswer | None = None
    ) -> PermissionAnswer | None:
        """The answer to an open request, or None once it is withdrawn. When nobody answered
        `within` seconds (None: no limit) or the wait is cancelled, it is settled with `unanswered` (None:
        withdrawn). It is no longer pending afterwards."""
        pending = self._pending.get(request_id)
        if pending is None:
            return None
        try:
            with anyio.move_on_after(within):
                await pending.done.wait()
        finally:
            if not pending.done.is_set():
                pending.answer = unanswered
                self._settle(request_id, unanswered)
            self._pending.pop(request_id, None)
        return pending.answer

    def answer(self, request_id: str, answer: PermissionAnswer) -> bool:
        """Answer a pending request; False when it is unknown or already answered (first wins)."""
        pending = self._pending.get(request_id)
        if pending is None or pending.done.is_set():
            return False
        pending.answer = answer
        self._settle(request_id, answer)
        return True

    def withdraw(self, request_id: str) -> bool:
        """Settle a pending request without an answer (its asker no longer wants one): `wait`
        returns None. False when it is unknown or settled already."""
        pending = self._pending.get(request_id)
        if pending is None or pending.done.is_set():
            return False
        self._settle(request_id, None)
        return True

    def settled_as(self, request_id: str) -> Outcome | None:
        """How a recently settled request ended ("allowed", "denied", "withdrawn"), for a clear
        refusal of a late answer; None when it is pending or unknown."""
        return self._settled.get(request_id)

    def deny_all(self, message: str) -> None:
        """The session is going away: nothing stays waiting."""
        for request_id in list(self._pending):
            self.answer(request_id, PermissionAnswer(False, message))

    def _settle(self, request_id: str, answer: PermissionAnswer | None) -> None:
        pending = self._pending.get(request_id)
        if pending is not None:
            pending.done.set()
        self._settled[request_id] = outcome(answer)
        self._trim()
        self._tell(lambda listener: listener.settled(request_id, answer))

    def _trim(self) -> None:
        while len(self._settled) > _KEPT_SETTLED:
            self._settled.popitem(last=False)

    def _tell(self, call: Callable[[PermissionListener], None]) -> None:
        for listener in list(self._listeners):
            try:
                call(listener)
            except Exception:  # a broken viewer must not break the session
                _log.exception("a permission listener failed")
