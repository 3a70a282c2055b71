"""Useful titles for tool calls and subagents (design §2)."""

from __future__ import annotations

from typing import Any

MAX_TITLE = 80
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})

# The input field that best summarises a call, per common tool.
_SUMMARY_FIELD = {
    "Bash": "command",
    "BashOutput": "bash_id",
    "KillShell": "shell_id",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Grep": "pattern",
    "Glob": "pattern",
    "WebFetch": "url",
    "WebSearch": "query",
    "Skill": "skill",
    "ToolSearch": "query",
}


def truncate(text: str, limit: int = MAX_TITLE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_title(name: str, args: dict[str, Any]) -> tuple[str, str]:
    """(title, description) for a non-subagent tool call."""
    description = args.get("description")
    if isinstance(description, str) and description.strip():
        return truncate(description), description
    field = _SUMMARY_FIELD.get(name)
    value = args.get(field) if field else None
    if isinstance(value, str) and value.strip():
        return truncate(value), value
    return f"{name} call", f"{name} call"


def subagent_title(args: dict[str, Any]) -> str | None:
    for field in ("description", "subagent_type", "prompt"):
        value = args.get(field)
        if isinstance(value, str) and value.strip():
            return truncate(value)
    return None
