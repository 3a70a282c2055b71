"""A session's `agentState` on Happy's server: its pending permission requests (`requests`, what
the app shows as prompts and answers with the `permission` RPC), the settled ones
(`completedRequests`, with how), and whether the terminal has the session (`controlledByUser`:
the TUI runs it). Kept here from the control socket's events, sent sealed by compare-and-set."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from happy_launcher.bridge.cipher import SessionCipher
from happy_launcher.bridge.updates import Updates
from happy_launcher.control.wire import Permission
from happy_launcher.errors import HappyServerError

_log = logging.getLogger(__name__)
Status = Literal["approved", "denied", "canceled"]
KEPT_COMPLETED = 50  # settled requests kept in the state (the app shows the recent ones)
_STATUS: dict[str, Status] = {"allowed": "approved", "denied": "denied", "withdrawn": "canceled"}


@dataclass
class AgentState:
    controlled_by_user: bool = False
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    completed: dict[str, dict[str, Any]] = field(default_factory=dict)

    def request(self, permission: Permission, now: int) -> None:
        self.requests[permission.id] = {
            "tool": permission.tool,
            "arguments": permission.input,
            "createdAt": now,
        }

    def settle(self, request_id: str, outcome: str, now: int, reason: str | None = None) -> bool:
        """Move a pending request to the settled ones; False if it is not pending here."""
        request = self.requests.pop(request_id, None)
        if request is None:
            return False
        done: dict[str, Any] = {**request, "completedAt": now, "status": _STATUS.get(outcome, "canceled")}
        if reason:
            done["reason"] = reason
        self.completed[request_id] = done
        for old in list(self.completed)[:-KEPT_COMPLETED]:
            del self.completed[old]
        return True

    def cancel_all(self, now: int) -> None:
        """The requests still pending when the session ended (or was left): canceled."""
        for request_id in list(self.requests):
            self.settle(request_id, "withdrawn", now)

    def to_json(self) -> dict[str, Any]:
        return {
            "controlledByUser": self.controlled_by_user,
            "requests": self.requests,
            "completedRequests": self.completed,
        }


class StatePublisher:
    """Sends a session's agentState by compare-and-set: on a version mismatch (another writer,
    or a version this bridge did not know yet) it takes the server's version and sends again."""

    def __init__(self, updates: Updates, happy_id: str, cipher: SessionCipher, version: int) -> None:
        self._updates = updates
        self._happy_id = happy_id
        self._cipher = cipher
        self.version = version

    async def publish(self, state: AgentState) -> bool:
        """True once the server holds `state`; False if it could not be sent now (the caller
        publishes again after the socket reconnects)."""
        sealed = self._cipher.seal(state.to_json())
        for _ in range(2):
            body = {"sid": self._happy_id, "agentState": sealed, "expectedVersion": self.version}
            try:
                answer = await self._updates.call("update-state", body)
            except HappyServerError as exc:
                _log.info("agentState of %s not sent now: %s", self._happy_id, exc)
                return False
            version = answer.get("version") if isinstance(answer, dict) else None
            if isinstance(version, int):
                self.version = version
            if isinstance(answer, dict) and answer.get("result") == "success":
                return True
        _log.warning("agentState of %s: the server kept refusing its version", self._happy_id)
        return False
