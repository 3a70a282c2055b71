"""The continuity check after a switch (issue 9 §4): the new front end's first record must
continue the chain the previous one left, either in the same transcript (its `parentUuid` is the
old leaf) or in a new session that Claude forked from it (whose file holds the old leaf). A
break means the model no longer sees part of the conversation (switching-facts §6): it is
reported, never silent. Plain file reads, no event loop: the caller decides when to look.

Also where a conversation was left: `unanswered_prompt` (a prompt Claude took and died before
answering, issue 16: sent again at a restart)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import orjson

from happy_launcher.claude.records import text_of

_TAIL_CHUNK = 64 << 10


@dataclass(frozen=True, slots=True)
class ChainMark:
    """Where a front end left the transcript: its size, and its last main-chain record."""

    path: Path
    size: int
    leaf: str | None


Verdict = Literal["continues", "broken", "unknown"]  # unknown: no new record yet


def mark(path: Path) -> ChainMark:
    """The chain's end in `path` now (a missing file: an empty chain)."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            return ChainMark(path, size, _last_leaf(f, size))
    except FileNotFoundError:
        return ChainMark(path, 0, None)


def check(previous: ChainMark, current: Path) -> Verdict:
    """Does the first main-chain record written after `previous` continue it?"""
    if previous.leaf is None:
        return "continues"  # nothing to continue: any start is a continuation
    if current != previous.path:  # a new session id: a fork must hold the old leaf
        try:
            return "continues" if previous.leaf.encode() in current.read_bytes() else "broken"
        except FileNotFoundError:
            return "unknown"
    try:
        with current.open("rb") as f:
            f.seek(previous.size)
            new = f.read()
    except FileNotFoundError:
        return "broken"  # the file the chain was in is gone
    for line in new.splitlines(keepends=True):
        record = _chain_record(line)
        if record is not None:
            parents = (record.get("parentUuid"), record.get("logicalParentUuid"))
            return "continues" if previous.leaf in parents else "broken"
    return "unknown"


def _chain_record(line: bytes) -> dict[str, Any] | None:
    if not line.endswith(b"\n"):
        return None  # still being written
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict) or not record.get("uuid") or record.get("isSidechain"):
        return None
    return record


@dataclass(frozen=True, slots=True)
class LeafPrompt:
    """A user prompt that is the last word of a conversation: its record's uuid and text."""

    uuid: str
    text: str


def unanswered_prompt(path: Path) -> LeafPrompt | None:
    """The prompt the conversation in `path` ends on, unanswered (Claude stopped after writing
    it, before any reply), if it does. What Claude adds without answering does not count as an
    answer: meta and system records, and its `<synthetic>` "No response requested." (written
    when a session left like this is resumed); an API error does."""
    try:
        with path.open("rb") as f:
            for record in _chain_backwards(f, f.seek(0, os.SEEK_END)):
                kind = record.get("type")
                if kind == "assistant" and not _no_reply(record):
                    return None
                if kind == "user" and not record.get("isMeta"):
                    return _prompt_of(record)
    except FileNotFoundError:
        pass
    return None


def _no_reply(record: dict[str, Any]) -> bool:
    message = record.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return model == "<synthetic>" and not record.get("isApiErrorMessage")


def _prompt_of(record: dict[str, Any]) -> LeafPrompt | None:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str | list):
        return None
    blocks = content if isinstance(content, list) else []
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
        return None  # a tool's result: Claude was mid-turn, not waiting on a prompt
    return LeafPrompt(str(record["uuid"]), text_of(content))


def _last_leaf(f: BinaryIO, size: int) -> str | None:
    """The uuid of the last main-chain record."""
    return next((str(r["uuid"]) for r in _chain_backwards(f, size)), None)


def _chain_backwards(f: BinaryIO, size: int) -> Iterator[dict[str, Any]]:
    """The main-chain records of `f`, last first, reading back from the end in chunks."""
    end, carry = size, b""
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        f.seek(start)
        data = f.read(end - start) + carry
        lines = data.split(b"\n")
        carry = lines[0] if start > 0 else b""  # maybe cut: completed by the next chunk
        for line in reversed(lines[1:] if start > 0 else lines):
            record = _chain_record(line + b"\n")
            if record is not None:
                yield record
        end = start
