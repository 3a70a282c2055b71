"""Useful titles for tool calls and subagents (design §2)."""

from __future__ import annotations

import json
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


# The records that name a session (Claude's bookkeeping in its transcript), best first, with the
# field that holds the name: a `/rename`, the title Claude made, an older version's summary.
SESSION_TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}


def session_title_record(line: bytes) -> tuple[str, str] | None:
    """(kind, name) of a transcript line that names its session (the name may be empty: Claude
    clears one so); None for any other line. Stdlib json: it runs before Claude starts, on the
    few lines that mention a title kind."""
    try:
        record = json.loads(line)
    except ValueError:  # a cut line, or not JSON
        return None
    kind = record.get("type") if isinstance(record, dict) else None
    if not isinstance(kind, str) or kind not in SESSION_TITLE_FIELDS:
        return None  # the kind's name appeared inside another record
    value = record.get(SESSION_TITLE_FIELDS[kind])
    return (kind, value) if isinstance(value, str) else None
