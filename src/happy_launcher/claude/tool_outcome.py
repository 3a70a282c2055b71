"""How a tool call ended, from what Claude wrote of it (docs/decisions.md): None when it
succeeded, else `failed`, `denied` or `cancelled`, carried by `tool-call-end.status`."""

from __future__ import annotations

from typing import Any

from happy_launcher.claude.records import Record, text_of
from happy_launcher.protocol import ToolStatus

# `toolUseResult` of a call the user stopped: a "No" in the TUI's dialog, or Esc while it ran
# (the turn is interrupted either way).
USER_REJECTED = "User rejected tool use"
# The starts of the results Claude writes for a call that did not run to its end.
_CANCELLED = (
    "The user doesn't want to",  # stopped by the user (both wordings Claude has)
    "[Tool call interrupted",  # the session ended while it ran (Claude's, and the converter's)
    "[Request interrupted",
    "[Tool call skipped",
)
_DENIED = ("Permission to use ",)  # a permission rule or mode refused it


def denied_call(record: Record) -> str | None:
    """The call a PermissionRequest hook (happy's, in local mode) denied, from the attachment
    Claude writes just before that call's result; None for any other record."""
    attachment = record.data.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "hook_permission_decision":
        return None
    call = attachment.get("toolUseID")
    return call if attachment.get("decision") == "deny" and isinstance(call, str) else None


def tool_status(block: dict[str, Any], record: Record, *, denied: bool) -> ToolStatus | None:
    """`block`: a tool_result of `record`; `denied`: a hook denied its call."""
    if block.get("is_error") is not True:
        return None
    if denied:
        return "denied"
    if record.data.get("toolUseResult") == USER_REJECTED:
        return "cancelled"
    content = block.get("content")
    text = text_of(content if isinstance(content, str | list) else None).lstrip()
    if text.startswith(_CANCELLED):
        return "cancelled"
    if text.startswith(_DENIED):
        return "denied"
    return "failed"
