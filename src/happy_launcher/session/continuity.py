"""The continuity check after a switch (issue 9 §4): the new front end's first record must
continue the chain the previous one left, either in the same transcript (its `parentUuid` is the
old leaf) or in a new session that Claude forked from it (whose file holds the old leaf). A
break means the model no longer sees part of the conversation (switching-facts §6): it is
reported, never silent. Plain file reads, no event loop: the caller decides when to look."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

import orjson

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


def _chain_record(line: bytes) -> dict[str, object] | None:
    if not line.endswith(b"\n"):
        return None  # still being written
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict) or not record.get("uuid") or record.get("isSidechain"):
        return None
    return record


def _last_leaf(f: BinaryIO, size: int) -> str | None:
    """The uuid of the last main-chain record, reading back from the end in chunks."""
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
                return str(record["uuid"])
        end = start
    return None
