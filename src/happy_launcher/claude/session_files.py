"""All transcript files of one Claude session, read incrementally into deduplicated records.

A happy run can go through several Claude session ids (`/clear`, fork), each with its main file;
each main file has subagent files in `<session-id>/subagents/agent-<agentId>.jsonl`, with
`agent-<agentId>.meta.json` naming the parent `Agent` tool call (`toolUseId`). Earlier main files
stay watched: Claude can still append to them (design §3).

This is the synchronous core shared by `happy replay` and the live scanner.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from happy_launcher.claude.records import Malformed, Record, parse_line, record_key, stopping_agent_id
from happy_launcher.claude.tail import LineTail

_AGENT_PREFIX = "agent-"
_JSONL = ".jsonl"


@dataclass(slots=True)
class ReadStats:
    records: int = 0
    duplicates: int = 0
    malformed: dict[str, int] = field(default_factory=dict)

    def count_malformed(self, reason: str) -> None:
        self.malformed[reason] = self.malformed.get(reason, 0) + 1


@dataclass(slots=True)
class _SubagentFile:
    agent_id: str
    tail: LineTail
    meta_path: Path
    tool_use_id: str | None = None

    def tag(self) -> str | None:
        if self.tool_use_id is None:
            try:
                meta = orjson.loads(self.meta_path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                return None  # not written yet: the mapper falls back to ancestry/prompt matching
            value = meta.get("toolUseId") if isinstance(meta, dict) else None
            self.tool_use_id = value if isinstance(value, str) else None
        return self.tool_use_id


@dataclass(slots=True)
class _MainFile:
    tail: LineTail
    subagents_dir: Path
    subagents: dict[str, _SubagentFile] = field(default_factory=dict)


def _untagged() -> str | None:
    return None


class SessionFiles:
    def __init__(self, processed: set[str] | None = None) -> None:
        self.processed: set[str] = processed if processed is not None else set()
        self.stats = ReadStats()
        self._mains: dict[Path, _MainFile] = {}

    @property
    def paths(self) -> list[Path]:
        return list(self._mains)

    def add_main(self, path: Path, *, skip_existing: bool = False) -> bool:
        """Watch a main transcript; with `skip_existing`, its current records (and its subagents')
        are marked processed, not re-sent (a resumed session). False if already watched."""
        path = path.absolute()
        if path in self._mains:
            return False
        main = _MainFile(LineTail(path), path.with_suffix("") / "subagents")
        self._mains[path] = main
        if skip_existing:
            for _ in self._read_main(main, emit=False):
                pass
            self._discover(main)
            for sub in main.subagents.values():
                for _ in self._read_file(sub.tail, sub.tag, emit=False):
                    pass
        return True

    def read_new(self) -> Iterator[Record]:
        """Every record appended since the last call, deduplicated, in a causal order: main
        files first, and a subagent's file drained before the main record that stops it."""
        for main in list(self._mains.values()):
            yield from self._read_main(main, emit=True)
            self._discover(main)
            for sub in list(main.subagents.values()):
                yield from self._read_file(sub.tail, sub.tag, emit=True)

    def finish(self) -> Iterator[Record]:
        """End of reading finished files: the unfinished last line of each file, if any."""
        for main in self._mains.values():
            for tail in [main.tail, *(s.tail for s in main.subagents.values())]:
                line = tail.take_partial()
                if line is not None:
                    parsed = parse_line(line)
                    if isinstance(parsed, Malformed):
                        self.stats.count_malformed("truncated last line")
                    elif self._fresh(parsed):
                        yield parsed

    def _read_main(self, main: _MainFile, *, emit: bool) -> Iterator[Record]:
        for record in self._read_file(main.tail, _untagged, emit=emit):
            agent_id = stopping_agent_id(record)
            if agent_id is not None:
                sub = self._subagent(main, agent_id)
                if sub is not None:
                    yield from self._read_file(sub.tail, sub.tag, emit=emit)
            yield record

    def _read_file(self, tail: LineTail, tag: Callable[[], str | None], *, emit: bool) -> Iterator[Record]:
        while lines := tail.read_lines():
            parent = tag()
            for line in lines:
                parsed = parse_line(line, parent_tool_use_id=parent)
                if isinstance(parsed, Malformed):
                    self.stats.count_malformed(parsed.reason)
                elif self._fresh(parsed) and emit:
                    yield parsed

    def _fresh(self, record: Record) -> bool:
        key = record_key(record)
        if key is not None:
            if key in self.processed:
                self.stats.duplicates += 1
                return False
            self.processed.add(key)
        self.stats.records += 1
        return True

    def _discover(self, main: _MainFile) -> None:
        try:
            names = [entry.name for entry in os.scandir(main.subagents_dir)]
        except OSError:
            return
        for name in names:
            if name.startswith(_AGENT_PREFIX) and name.endswith(_JSONL):
                self._subagent(main, name[len(_AGENT_PREFIX) : -len(_JSONL)])

    def _subagent(self, main: _MainFile, agent_id: str) -> _SubagentFile | None:
        sub = main.subagents.get(agent_id)
        if sub is None:
            path = main.subagents_dir / f"{_AGENT_PREFIX}{agent_id}{_JSONL}"
            if not path.exists():
                return None
            sub = _SubagentFile(agent_id, LineTail(path), path.with_suffix(".meta.json"))
            main.subagents[agent_id] = sub
        return sub
