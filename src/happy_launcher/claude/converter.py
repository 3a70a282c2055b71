"""Agent SDK messages -> transcript-shaped records and turn results (design §4).

Remote mode reads two feeds of one session: the SDK's messages (fast) and the transcript Claude
writes (complete). Every SDK `AssistantMessage`/`UserMessage` carries the uuid of its transcript
record (switching-facts §7), so a record made here keeps it and the mirror keeps whichever copy
comes first. Records are shaped like the transcript's, so that one mapper maps both alike:

- one main-chain `parentUuid` chain, and one per subagent (`isSidechain`, and the parent `Agent`
  call's id as `parent_tool_use_id`); a sidechain record never advances the main chain;
- an assistant message with `error` set (an API failure, model `<synthetic>`) is the
  transcript's `isApiErrorMessage` record: a service text, and its turn ends `failed`;
- a subagent whose first message is not its prompt (background agents) gets a synthetic root
  with the `Agent` call's prompt first; a finished task gets a synthetic task-notification
  record, which stops its subagent where the transcript would;
- main-chain user text other than interrupt markers and task notifications is left to the
  transcript: only its copy says what it is (a prompt, `isMeta`, a compaction summary).

`ResultMessage` -> `TurnResult`; `StreamEvent` text deltas -> `Partial` (a transient preview,
never a record); `SystemMessage` init -> `SessionStarted`. Sans-IO and deterministic: messages
are read by class name and attributes (no SDK import), unknown ones skipped and counted.

Usage: the SDK yields a main-thread assistant message as soon as its content block is complete,
with the usage the reply's start reported (output_tokens 1); the mapper carries a reply's usage
on its first record. With stream events (partial messages on), the first record of a reply
waits for the reply's next event: a `message_delta` (a one-block reply: most answers) gives it
the final usage and stop_reason; the next block's start releases it as it is (the transcript's
copy of a long reply has that snapshot too). Both come in the same stream burst: no visible
delay. Any other message releases it first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from happy_launcher.claude.records import (
    INTERRUPT_TEXTS,
    SYNTHETIC,
    SYNTHETIC_SUBAGENT_PROMPT,
    Record,
    make_record,
    text_of,
)
from happy_launcher.claude.sdk_items import Item, SessionStarted, partial, turn_result
from happy_launcher.claude.titles import SUBAGENT_TOOLS

SYNTHETIC_NOTIFICATION = "task-notification"
SYNTHETIC_INTERRUPTED = "interrupted"
INTERRUPTED_RESULT = "[Tool call interrupted: the session was stopped]"


@dataclass(slots=True)
class ConverterStats:
    unknown_messages: Counter[str] = field(default_factory=Counter)
    unknown_blocks: Counter[str] = field(default_factory=Counter)
    left_to_transcript: int = 0  # main-chain user text: its transcript copy says what it is


_Handler = Callable[[Any], list[Item]]


class Converter:
    """Converts one session's SDK messages in the order the client yields them."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.stats = ConverterStats()
        self._leaves: dict[str | None, str | None] = {}  # chain (parent tool id; None: main) -> last uuid
        self._agent_prompts: dict[str, str] = {}  # `Agent`/`Task` call id -> its prompt
        self._rooted: set[str] = set()  # subagents whose root record was made
        self._open_calls: dict[str, str | None] = {}  # tool_use id -> its chain, until its result
        self._streaming = False  # stream events come: main-thread assistant records wait (see above)
        self._held: Record | None = None
        self._reply: object = None  # message id of the last main-thread reply seen
        self._handlers: dict[str, _Handler] = {
            "AssistantMessage": self._assistant,
            "UserMessage": self._user,
            "ResultMessage": lambda m: [turn_result(m)],
            "SystemMessage": self._system,
            "TaskNotificationMessage": self._task_notification,
            "ConversationResetMessage": self._reset,
        }

    def convert(self, message: object) -> list[Item]:
        """The items one SDK message makes, in order (often none)."""
        if type(message).__name__ == "StreamEvent":
            return self._stream_event(message)
        out = self.flush()
        for cls in type(message).__mro__:  # a new SystemMessage subclass is still a SystemMessage
            handler = self._handlers.get(cls.__name__)
            if handler is not None:
                return out + handler(message)
            if cls.__name__ in _SILENT:
                return out
        self.stats.unknown_messages[type(message).__name__] += 1
        return out

    def flush(self) -> list[Item]:
        """The record still waiting for its reply's next stream event (the stream ended)."""
        held, self._held = self._held, None
        return [held] if held is not None else []

    def interrupted(self) -> list[Item]:
        """For an abort that ends the session's turn without Claude's own results (design §4):
        what is still held, then synthetic interrupted results for the calls still running, the
        latest first: a subagent's calls end before the `Agent` call that stops it."""
        records = [
            self._record(_user_data([_tool_result(call)], SYNTHETIC_INTERRUPTED), chain, advance=False)
            for call, chain in reversed(self._open_calls.items())
        ]
        self._open_calls.clear()
        return self.flush() + records

    # -- messages ---------------------------------------------------------------------------

    def _assistant(self, m: Any) -> list[Item]:
        chain = _str_or_none(getattr(m, "parent_tool_use_id", None))
        content = getattr(m, "content", None)
        blocks = self._blocks(content if isinstance(content, list) else [])
        message: dict[str, Any] = {"role": "assistant", "model": getattr(m, "model", None), "content": blocks}
        for key, attr in (("id", "message_id"), ("stop_reason", "stop_reason"), ("usage", "usage")):
            if (value := getattr(m, attr, None)) is not None:
                message[key] = value
        data: dict[str, Any] = {"type": "assistant", "uuid": getattr(m, "uuid", None), "message": message}
        if getattr(m, "error", None) is not None:
            data["isApiErrorMessage"] = True  # what the transcript's `<synthetic>` error record says
        for block in blocks:
            if block["type"] == "tool_use":
                self._open_calls[block["id"]] = chain
                prompt = block["input"].get("prompt") if isinstance(block["input"], dict) else None
                if block["name"] in SUBAGENT_TOOLS and isinstance(prompt, str):
                    self._agent_prompts[block["id"]] = prompt
        record = self._record(data, chain)
        if chain is None and self._streaming and message.get("id") != self._reply:
            self._reply = message.get("id")
            self._held = record
            return []
        return [*self._root(chain, None), record]

    def _user(self, m: Any) -> list[Item]:
        chain = _str_or_none(getattr(m, "parent_tool_use_id", None))
        content = getattr(m, "content", None)
        content = self._blocks(content) if isinstance(content, list) else content
        blocks = content if isinstance(content, list) else []
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        text = text_of(content if isinstance(content, str | list) else None)
        origin = getattr(m, "origin", None)
        notification = isinstance(origin, dict) and origin.get("kind") == "task-notification"
        if chain is None and not results and text.strip() not in INTERRUPT_TEXTS and not notification:
            self.stats.left_to_transcript += 1
            return []
        data = _user_data(content)
        data["uuid"] = getattr(m, "uuid", None)
        if (tool_use_result := getattr(m, "tool_use_result", None)) is not None:
            data["toolUseResult"] = tool_use_result
        if isinstance(origin, dict):
            data["origin"] = origin
        for call in results:
            self._open_calls.pop(call, None)
        root = self._root(chain, None if results else text)
        return [*root, self._record(data, chain)]

    def _stream_event(self, m: Any) -> list[Item]:
        if getattr(m, "parent_tool_use_id", None) is not None:
            return []  # not seen from Claude Code 2.1: subagents stream nothing
        self._streaming = True
        event = getattr(m, "event", None)
        kind = event.get("type") if isinstance(event, dict) else None
        out: list[Item] = []
        held = self._held
        if held is not None and kind != "content_block_stop":
            self._held = None
            if kind == "message_delta":
                _finish_reply(held, event)
            out.append(held)
        if (text := partial(event)) is not None:
            out.append(text)
        return out

    def _system(self, m: Any) -> list[Item]:
        data = getattr(m, "data", None)
        session_id = data.get("session_id") if isinstance(data, dict) else None
        if getattr(m, "subtype", None) == "init" and isinstance(session_id, str):
            self.session_id = session_id
            return [SessionStarted(session_id)]
        return []

    def _task_notification(self, m: Any) -> list[Item]:
        """A finished task: the record the transcript writes for it (`<task-notification>` with
        origin task-notification), so that its subagent stops here, not when the transcript's
        copy is read, after the parent's next message."""
        tool_use_id = _str_or_none(getattr(m, "tool_use_id", None))
        if tool_use_id is None:
            return []
        task_id = getattr(m, "task_id", "")
        text = (
            f"<task-notification>\n<task-id>{task_id}</task-id>\n<tool-use-id>{tool_use_id}</tool-use-id>\n"
            f"<status>{getattr(m, 'status', '')}</status>\n</task-notification>"
        )
        data = _user_data(text, SYNTHETIC_NOTIFICATION)
        data["origin"] = {"kind": "task-notification"}
        return [self._record(data, None, advance=False)]

    def _reset(self, m: Any) -> list[Item]:
        del m  # `/clear`: a new conversation, whose first record has no parent
        self._leaves.clear()
        return []

    # -- pieces -----------------------------------------------------------------------------

    def _root(self, chain: str | None, text: str | None) -> list[Record]:
        """A subagent's first record is its prompt: the SDK's (`text` set), or else a synthetic
        one with the `Agent` call's prompt, made before the subagent's first message."""
        if chain is None or chain in self._rooted:
            return []
        self._rooted.add(chain)
        prompt = self._agent_prompts.get(chain)
        if text is not None or prompt is None:
            return []
        return [self._record(_user_data(prompt, SYNTHETIC_SUBAGENT_PROMPT), chain)]

    def _record(self, data: dict[str, Any], chain: str | None, *, advance: bool = True) -> Record:
        data["parentUuid"] = self._leaves.get(chain)
        data["isSidechain"] = chain is not None
        if self.session_id is not None:
            data["sessionId"] = self.session_id
        uuid = data.get("uuid")
        if uuid is None:
            data.pop("uuid", None)
        elif advance:
            self._leaves[chain] = uuid
        return make_record(data, parent_tool_use_id=chain)

    def _blocks(self, blocks: list[Any]) -> list[dict[str, Any]]:
        out = []
        for block in blocks:
            make = _BLOCKS.get(type(block).__name__)
            if make is None:
                self.stats.unknown_blocks[type(block).__name__] += 1
            else:
                out.append(make(block))
        return out


# SDK messages that make nothing, besides the SystemMessage kinds (status, task lifecycle,
# hook events: the records and results say what matters of them).
_SILENT = frozenset({"RateLimitEvent"})

_BLOCKS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "TextBlock": lambda b: {"type": "text", "text": b.text},
    "ThinkingBlock": lambda b: {"type": "thinking", "thinking": b.thinking, "signature": b.signature},
    "ToolUseBlock": lambda b: {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input},
    "ToolResultBlock": lambda b: {
        "type": "tool_result",
        "tool_use_id": b.tool_use_id,
        "content": b.content,
        "is_error": b.is_error,
    },
    "ServerToolUseBlock": lambda b: {"type": "server_tool_use", "id": b.id, "name": b.name, "input": b.input},
    "ServerToolResultBlock": lambda b: {"type": "server_tool_result", "tool_use_id": b.tool_use_id},
}


def _user_data(content: Any, synthetic: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": content}}
    if synthetic is not None:
        data[SYNTHETIC] = synthetic
    return data


def _tool_result(call: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call, "content": INTERRUPTED_RESULT, "is_error": True}


def _finish_reply(record: Record, event: Any) -> None:
    """The reply's `message_delta`: its final usage (output tokens) and stop reason."""
    message = record.message
    if isinstance(usage := event.get("usage"), dict):
        start = message.get("usage")
        message["usage"] = {**(start if isinstance(start, dict) else {}), **usage}
    delta = event.get("delta")
    if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
        message["stop_reason"] = delta["stop_reason"]


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
