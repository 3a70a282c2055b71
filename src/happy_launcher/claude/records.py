"""Claude transcript records: tolerant parsing of JSONL lines into a light typed view.

A record keeps the parsed JSON object as-is (so nothing is lost when it is passed on) and exposes
the handful of fields the mapper and scanner need. Unknown record types are kept as kind
"unknown" and counted by the caller, never fatal (a Claude Code upgrade adds kinds regularly).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

MESSAGE_KINDS = frozenset({"user", "assistant", "system", "attachment", "progress"})
# Bookkeeping kinds (claude-offline.md §3): no protocol output, and most have no uuid.
BOOKKEEPING_KINDS = frozenset(
    {
        "summary",
        "queue-operation",
        "file-history-snapshot",
        "mode",
        "permission-mode",
        "last-prompt",
        "tools-used",
        "cost-state",
        "atis-latch",
        "api-request",
        "api-request-shape",
        "api-request-blob",
        "custom-title",
        "tag",
        "agent-name",
        "result",
    }
)
KNOWN_KINDS = MESSAGE_KINDS | BOOKKEEPING_KINDS
UNKNOWN = "unknown"
# User records that are not prompts: Claude's interrupt markers (they end the turn cancelled)...
INTERRUPT_TEXTS = frozenset({"[Request interrupted by user]", "[Request interrupted by user for tool use]"})
# ... and what the TUI writes for slash commands and `!` shell input.
LOCAL_COMMAND_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
)
# Records happy makes itself (claude/converter.py) say why under this key, never a Claude field.
SYNTHETIC = "happySynthetic"
SYNTHETIC_SUBAGENT_PROMPT = "subagent-prompt"  # a subagent's opening prompt, from its Agent call


@dataclass(slots=True)
class Record:
    """One transcript record. `kind` is the record type, or "unknown" (see `type` for the original)."""

    kind: str
    type: str
    data: dict[str, Any]
    # The provider id of the `Task`/`Agent` call this record belongs to, when known explicitly:
    # from the SDK (`parent_tool_use_id`) or from the subagent file's `.meta.json` (`toolUseId`).
    parent_tool_use_id: str | None = None
    size: int = 0
    invalid_utf8: bool = False  # the line had bytes that are not UTF-8: they read as U+FFFD

    @property
    def uuid(self) -> str | None:
        value = self.data.get("uuid")
        return value if isinstance(value, str) else None

    @property
    def parent_uuid(self) -> str | None:
        value = self.data.get("parentUuid")
        return value if isinstance(value, str) else None

    @property
    def is_sidechain(self) -> bool:
        return self.data.get("isSidechain") is True

    @property
    def message(self) -> dict[str, Any]:
        value = self.data.get("message")
        return value if isinstance(value, dict) else {}

    @property
    def content(self) -> str | list[Any] | None:
        value = self.message.get("content")
        return value if isinstance(value, str | list) else None

    @property
    def timestamp_ms(self) -> int | None:
        return parse_timestamp_ms(self.data.get("timestamp"))

    def explicit_parent_tool_id(self) -> str | None:
        if self.parent_tool_use_id is not None:
            return self.parent_tool_use_id
        for key in ("parent_tool_use_id", "parentToolUseId", "parentToolUseID"):
            value = self.data.get(key)
            if isinstance(value, str) and value:
                return value
        return None


@dataclass(frozen=True, slots=True)
class Malformed:
    """A line that is not a JSON object. `reason` says why, for the skip summary."""

    reason: str
    size: int


def make_record(data: dict[str, Any], *, size: int = 0, parent_tool_use_id: str | None = None) -> Record:
    raw_type = data.get("type")
    type_ = raw_type if isinstance(raw_type, str) else ""
    kind = type_ if type_ in KNOWN_KINDS else UNKNOWN
    return Record(kind=kind, type=type_, data=data, parent_tool_use_id=parent_tool_use_id, size=size)


def parse_line(line: bytes | str, *, parent_tool_use_id: str | None = None) -> Record | Malformed:
    """Parse one transcript line (without its newline). Never raises."""
    size = len(line)
    invalid_utf8 = False
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        if not isinstance(line, bytes):
            return Malformed("not JSON", size)
        # Invalid UTF-8 inside otherwise valid JSON: keep the record, with U+FFFD for the bad
        # bytes, and mark it so that the reader can count it.
        try:
            data = orjson.loads(line.decode("utf-8", errors="replace"))
        except orjson.JSONDecodeError:
            return Malformed("not JSON", size)
        invalid_utf8 = True
    if not isinstance(data, dict):
        return Malformed("not a JSON object", size)
    record = make_record(data, size=size, parent_tool_use_id=parent_tool_use_id)
    if invalid_utf8:
        record.invalid_utf8 = True
    return record


def record_key(record: Record) -> str | None:
    """The dedupe key of a record across all files of a session (design §3), if it has one."""
    uuid = record.uuid
    if uuid is not None:
        return uuid
    if record.kind == "summary":
        return f"summary:{record.data.get('leafUuid')}:{record.data.get('summary')}"
    return None


def parse_timestamp_ms(value: object) -> int | None:
    """Unix ms of an ISO timestamp; None if it is not one, or before 1970 (envelope times are
    never negative)."""
    if not isinstance(value, str):
        return None
    try:
        ms = int(datetime.fromisoformat(value).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None
    return ms if ms >= 0 else None


def text_of(content: str | list[Any] | None) -> str:
    """The plain text of message content: a string, or the text blocks of a list joined."""
    if isinstance(content, str):
        return content
    if not content:
        return ""
    parts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str))


_TOOL_USE_ID = re.compile(r"<tool-use-id>\s*([^<\s]+)\s*</tool-use-id>")
_TASK_ID = re.compile(r"<task-id>\s*([^<\s]+)\s*</task-id>")


def is_task_notification(record: Record) -> bool:
    """A user record announcing that a background agent finished (not a user prompt)."""
    origin = record.data.get("origin")
    return record.kind == "user" and isinstance(origin, dict) and origin.get("kind") == "task-notification"


def notification_ids(record: Record) -> tuple[str | None, str | None]:
    """(the `Agent` tool_use id, the agentId) a task-notification names, where present."""
    text = text_of(record.content)
    tool_use, task = _TOOL_USE_ID.search(text), _TASK_ID.search(text)
    return (tool_use.group(1) if tool_use else None, task.group(1) if task else None)


def stopping_agent_id(record: Record) -> str | None:
    """The agentId of the subagent whose end this main-chain record reports: the parent `Agent`
    tool result (foreground), or the task notification (background)."""
    if record.kind != "user":
        return None
    result = record.data.get("toolUseResult")
    if isinstance(result, dict):
        agent_id = result.get("agentId")
        if isinstance(agent_id, str) and result.get("status") != "async_launched":
            return agent_id
        return None
    return notification_ids(record)[1] if is_task_notification(record) else None
