"""A large realistic transcript built from the golden records of the real CLI."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import orjson

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "golden"
# Claude's uuids and tool ids: renamed per copy so that copies are new records, not duplicates.
_IDS = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|toolu_[A-Za-z0-9]+")


# Records that make envelopes (or end turns): a transcript of only these is the mapper's worst case.
CONVERSATION = frozenset({b"user", b"assistant", b"system"})


def golden_sessions(*, conversation_only: bool = False) -> list[list[bytes]]:
    """The main-file lines of each golden session, in order (`conversation_only`: only the
    user, assistant and system records)."""
    sessions = []
    for path in sorted(GOLDEN.glob("*/*.jsonl")):
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        if conversation_only:
            lines = [line for line in lines if _record_type(line) in CONVERSATION]
        if lines:
            sessions.append(lines)
    if not sessions:
        raise SystemExit(f"no golden transcripts under {GOLDEN}: run scripts/gen_fixtures.py first")
    return sessions


def _record_type(line: bytes) -> bytes | None:
    kind = orjson.loads(line).get("type")
    return kind.encode() if isinstance(kind, str) else None


def _renamer(suffix: bytes) -> Callable[[re.Match[bytes]], bytes]:
    def rename(match: re.Match[bytes]) -> bytes:
        return match.group(0)[: -len(suffix)] + suffix

    return rename


def build(path: Path, min_bytes: int, *, conversation_only: bool = False) -> tuple[int, int]:
    """Write golden sessions again and again, ids renamed per copy; (lines, bytes) written."""
    sessions = golden_sessions(conversation_only=conversation_only)
    lines = size = copy = 0
    with path.open("wb") as f:
        while size < min_bytes:
            for session in sessions:
                rename = _renamer(b"%06x" % copy)
                copy += 1
                chunk = b"\n".join(_IDS.sub(rename, line) for line in session)
                f.write(chunk + b"\n")
                lines += len(session)
                size += len(chunk) + 1
    return lines, size


def check(path: Path) -> None:
    """Every line must be valid JSON after the renaming."""
    with path.open("rb") as f:
        for line in f:
            orjson.loads(line)
