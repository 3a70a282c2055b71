"""The Agent SDK's `can_use_tool` callback, answered through the session's permission broker."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import (
    CanUseTool,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from happy_launcher.session.permissions import PermissionBroker


def can_use_tool(broker: PermissionBroker) -> CanUseTool:
    """Each call becomes a pending request on `broker`; its first answer is Claude's."""

    async def ask(tool: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
        tool_use_id = getattr(context, "tool_use_id", None)
        answer = await broker.ask(tool, tool_input, tool_use_id if isinstance(tool_use_id, str) else None)
        if answer.allow:
            return PermissionResultAllow(updated_input=answer.updated_input)
        # Worded as Claude's own denials, so that the call's end reads `denied` (claude/tool_outcome.py).
        message = f"Permission to use {tool} has been denied: {answer.message or 'no reason given'}"
        return PermissionResultDeny(message=message, interrupt=answer.stop)

    return ask
