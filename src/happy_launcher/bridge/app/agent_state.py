"""A session's `agentState` on Happy's server: its pending permission requests (`requests`, what
the app shows as prompts and answers with the `permission` RPC), the settled ones
(`completedRequests`, with how), and whether the terminal has the session (`controlledByUser`:
the TUI runs it). Kept here from the control socket's events, sent sealed by compare-and-set
(`bridge/app/versioned.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from happy_launcher.control.wire import Permission

Status = Literal["approved", "denied", "canceled"]
KEPT_COMPLETED = 50  # settled requests kept in the state (the app shows the recent ones)
_STATUS: dict[str, Status] = {"allowed": "approved", "denied": "denied", "withdrawn": "canceled"}


@dataclass
class AgentState:
    controlled_by_user: bool = False
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    completed: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # a denial's reason, given before it settles

    def request(self, permission: Permission, now: int) -> None:
        self.requests[permission.id] = {
            "tool": permission.tool,
            "arguments": permission.input,
            "createdAt": now,
        }

    def settle(self, request_id: str, outcome: str, now: int, reason: str | None = None) -> bool:
        """Move a pending request to the settled ones; False if it is not pending here."""
        request = self.requests.pop(request_id, None)
        reason = reason or self.reasons.pop(request_id, None)
        if request is None:
            return False
        done: dict[str, Any] = {**request, "completedAt": now, "status": _STATUS.get(outcome, "canceled")}
        if reason and outcome == "denied":  # (the terminal may have allowed it first)
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
