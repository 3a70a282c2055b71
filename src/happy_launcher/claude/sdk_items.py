"""What the SDK converter makes besides records: turn results, partial text, session ids.

Read from SDK messages by attribute (no SDK import), like the rest of the converter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from happy_launcher.claude.records import Record
from happy_launcher.protocol import TurnStatus

_ABORTED_REASONS = frozenset({"aborted_streaming", "aborted_tools"})
# Why a failed turn stopped, for its service text, when the result has no text of its own.
_FAILURES = {
    "error_max_turns": "Claude stopped: it reached the maximum number of turns.",
    "error_max_budget_usd": "Claude stopped: it reached the budget limit.",
    "error_max_structured_output_retries": "Claude stopped: it could not produce the structured output.",
}


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The end of a Claude turn (the SDK's ResultMessage). `service`: why a failed turn failed."""

    status: TurnStatus
    service: str | None = None
    reason: str | None = None  # the SDK's terminal_reason, else its subtype (for logs)
    # A turn Claude began itself (origin: a background task's notification...): the uuids of
    # the prompts it took in. None: a turn that a prompt began.
    taken: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Partial:
    """Text streaming in (a StreamEvent delta): for a screen's preview only, never stored."""

    text: str
    thinking: bool = False


@dataclass(frozen=True, slots=True)
class SessionStarted:
    """Claude's session id, from the SDK's `init` (sent again before each background turn)."""

    session_id: str


Item = Record | TurnResult | Partial | SessionStarted


def turn_result(m: Any) -> TurnResult:
    """A ResultMessage's turn status: `cancelled` when interrupted (terminal_reason aborted_*,
    or error_during_execution without a reason), `completed` when not an error, else `failed`
    with a human reason (the result text: for an API error, Claude's "API Error: 529 …")."""
    subtype = str(getattr(m, "subtype", ""))
    reason = getattr(m, "terminal_reason", None)
    reason = reason if isinstance(reason, str) and reason else None
    taken = _taken(m)
    if reason in _ABORTED_REASONS or (subtype == "error_during_execution" and reason is None):
        return TurnResult("cancelled", reason=reason or subtype, taken=taken)
    if not getattr(m, "is_error", False):
        return TurnResult("completed", reason=reason or subtype, taken=taken)
    return TurnResult("failed", _failure_text(m, subtype, reason), reason or subtype, taken)


def _taken(m: Any) -> tuple[str, ...] | None:
    """For a result whose turn Claude began itself, the prompts it took in (see TurnResult)."""
    origin = getattr(m, "origin", None)
    kind = origin.get("kind") if isinstance(origin, dict) else None
    if kind is None or kind == "human":
        return None
    uuids = getattr(m, "user_message_uuids", None)
    first = getattr(m, "user_message_uuid", None)
    listed = list(uuids) if isinstance(uuids, list) else []
    return tuple(dict.fromkeys(u for u in [*listed, first] if isinstance(u, str)))


def partial(event: object) -> Partial | None:
    """The text a raw stream event adds, if it is a text or thinking delta."""
    delta = event.get("delta") if isinstance(event, dict) else None
    if not isinstance(delta, dict):
        return None
    if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
        return Partial(delta["text"])
    if delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
        return Partial(delta["thinking"], thinking=True)
    return None


def _failure_text(m: Any, subtype: str, reason: str | None) -> str:
    result = getattr(m, "result", None)
    if isinstance(result, str) and result.strip():
        return result.strip()
    if subtype in _FAILURES:
        return _FAILURES[subtype]
    status = getattr(m, "api_error_status", None)
    detail = ", ".join(str(part) for part in (reason or subtype, status and f"HTTP {status}") if part)
    return f"Claude stopped with an error ({detail})."
