"""All transcript files of one Claude session, read incrementally into deduplicated records.

A happy run can go through several Claude session ids (`/clear`, fork), each with its main file;
each main file has subagent files in `<session-id>/subagents/agent-<agentId>.jsonl`, with
`agent-<agentId>.meta.json` naming the parent `Agent` tool call (`toolUseId`). Earlier main files
stay watched: Claude can still append to them (design §3).

This is the synchronous core shared by `happy replay` and the live scanner.

Live ordering (design §3): Claude flushes the main file and a subagent's file in the same write
cycle, and inotify can wake us between the two appends. So, when reading live (with a clock), the
main record that stops a foreground subagent waits, with the main records after it, until that
subagent's file shows its final answer, at most HOLD_MAX seconds: its last records are never
mapped after its `stop` (which would drop them).

A resumed session's files already hold its history: what each file held before Claude was
launched (`known`: sizes taken before the spawn) is indexed, its keys marked processed, and never
sent; everything after it is new, however late the reading starts (issue 7). Live reads take a
byte budget, so that a 100 MB history goes by in small batches.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from happy_launcher.claude.keyset import KeySet
from happy_launcher.claude.records import (
    Malformed,
    Record,
    parse_line,
    record_key,
    stopping_agent_id,
    text_of,
)
from happy_launcher.claude.tail import CHUNK, LineTail, StreamTail

HOLD_MAX = 0.3  # three of Claude's 100 ms transcript flush intervals
_AGENT_PREFIX = "agent-"
_JSONL = ".jsonl"
_MIN_CHUNK = 1 << 16
NOTHING_KNOWN: Mapping[Path, int] = {}


@dataclass(slots=True)
class ReadStats:
    records: int = 0
    duplicates: int = 0
    invalid_utf8: int = 0  # records kept with U+FFFD for bytes that are not UTF-8
    malformed: dict[str, int] = field(default_factory=dict)

    def count_malformed(self, reason: str) -> None:
        self.malformed[reason] = self.malformed.get(reason, 0) + 1


@dataclass(slots=True)
class _SubagentFile:
    agent_id: str
    tail: LineTail
    meta_path: Path
    name: str  # os.fspath(tail.path), to match the watcher's changes
    tool_use_id: str | None = None
    answered: bool = False  # the last record read is the subagent's final answer
    new: bool = True  # found, not read yet (its first lines may predate the directory's watch)

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
    subagents_dir: Path | None  # None: a stream, which has no session directory beside it
    known: Mapping[Path, int]  # sizes of the session's files before the launch
    name: str  # os.fspath(tail.path), to match the watcher's changes
    subagents: dict[str, _SubagentFile] = field(default_factory=dict)
    held: list[Record] = field(default_factory=list)  # waiting for a subagent's last records
    held_since: float | None = None
    # Changes that can mean new or grown subagent files: the session directory, the subagents
    # directory, anything in it (`os.fspath` strings, like the watcher's changes).
    sub_dirs: tuple[str, ...] = ()
    sub_prefix: str | None = None

    def __post_init__(self) -> None:
        if self.subagents_dir is not None:
            self.sub_dirs = (os.fspath(self.subagents_dir.parent), os.fspath(self.subagents_dir))
            self.sub_prefix = self.sub_dirs[1] + os.sep


def _is_final_answer(record: Record) -> bool:
    if record.kind != "assistant":
        return False
    if record.data.get("isApiErrorMessage") is True:
        return True
    return bool(text_of(record.content)) and record.message.get("stop_reason") == "end_turn"


def _untagged() -> str | None:
    return None


def _touches_subagents(main: _MainFile, changed: Set[str]) -> bool:
    prefix, dirs = main.sub_prefix, main.sub_dirs
    return prefix is not None and any(path.startswith(prefix) or path in dirs for path in changed)


class SessionFiles:
    def __init__(self, processed: KeySet | None = None, *, clock: Callable[[], float] | None = None) -> None:
        """`clock` (monotonic seconds) makes this a live reader, which may hold records back
        briefly (see the module docstring); without one, files are read as finished."""
        self.processed = processed if processed is not None else KeySet()
        self.stats = ReadStats()
        self._mains: dict[Path, _MainFile] = {}
        self._clock = clock
        self._left: int | None = None  # bytes the current pass may still read; None: no limit
        self.behind = False  # the last pass stopped at its budget: more can be read at once
        self._meta_waits: dict[str, float] = {}  # new subagent file -> since when its meta is awaited

    @property
    def paths(self) -> list[Path]:
        return list(self._mains)

    def add_main(self, path: Path, *, known: Mapping[Path, int] = NOTHING_KNOWN) -> bool:
        """Watch a main transcript. `known`: the sizes of this session's files (main and
        subagents) before Claude was launched; those bytes are history: indexed, not sent.
        False if already watched."""
        path = path.absolute()
        if path in self._mains:
            return False
        tail = LineTail(path, known_size=known.get(path, 0), keep_open=True)
        self._mains[path] = _MainFile(tail, path.with_suffix("") / "subagents", known, os.fspath(path))
        return True

    def add_stream(self, name: Path, fd: int) -> None:
        """Read a main transcript from a pipe, FIFO or stdin (`fd`, owned by the caller): once,
        in order, to its end; no subagent files (a stream has no session directory)."""
        self._mains[name] = _MainFile(StreamTail(name, fd=fd), None, NOTHING_KNOWN, os.fspath(name))

    def read_new(
        self, *, final: bool = False, max_bytes: int | None = None, changed: Set[str] | None = None
    ) -> Iterator[Record]:
        """Every record appended since the last call, deduplicated, in a causal order: main
        files first, and a subagent's file drained before the main record that stops it.
        `final`: the writer is gone, release whatever was held back. `max_bytes`: stop reading
        new chunks after about that many bytes and set `behind`; the next call goes on (a
        subagent drained before its stopping record may exceed it). `changed`: only these
        paths (`os.fspath` strings) changed, as the watcher says; None: look at every file."""
        hold = self._clock is not None and not final
        self._left, self.behind = max_bytes, False
        for main in list(self._mains.values()):
            if changed is None or main.name in changed or main.held or main.tail.known_left:
                yield from self._read_main(main, hold=hold)
            if changed is None or _touches_subagents(main, changed):
                self._discover(main)
                for sub in list(main.subagents.values()):
                    if (changed is None or sub.new or sub.name in changed) and not (
                        hold and self._awaits_meta(sub)
                    ):
                        yield from self._read_sub(sub, bounded=True)
            if main.held:  # what the subagents just wrote may release it
                yield from self._read_main(main, hold=hold)

    def hold_wait(self) -> float | None:
        """Seconds until held records are released anyway, if any are held."""
        if self._clock is None:
            return None
        since = [m.held_since for m in self._mains.values() if m.held_since is not None]
        since += self._meta_waits.values()
        return max(0.0, min(since) + HOLD_MAX - self._clock()) if since else None

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

    def _read_main(self, main: _MainFile, *, hold: bool) -> Iterator[Record]:
        self._index(main.tail, bounded=True)
        queued, main.held = main.held, []
        for record in itertools.chain(queued, self._read_file(main.tail, _untagged, bounded=True)):
            if main.held:  # behind a held record: keep the order
                main.held.append(record)
                continue
            agent_id = stopping_agent_id(record)
            if agent_id is not None:
                sub = self._subagent(main, agent_id)
                if sub is not None:
                    yield from self._read_sub(sub, bounded=False)
                if hold and sub is not None and not sub.answered and self._within_hold(main):
                    main.held.append(record)
                    continue
            yield record
        if not main.held:
            main.held_since = None

    def _within_hold(self, main: _MainFile) -> bool:
        assert self._clock is not None
        now = self._clock()
        if main.held_since is None:
            main.held_since = now
        return now < main.held_since + HOLD_MAX

    def _awaits_meta(self, sub: _SubagentFile) -> bool:
        """A subagent's file found before its meta names its call: not read yet, at most
        HOLD_MAX. Its first record (the subagent's prompt) read untagged, before the main
        record of its call, could only be told from the main chain's by its text."""
        if not sub.new or sub.tag() is not None:
            return False
        assert self._clock is not None
        now = self._clock()
        return now < self._meta_waits.setdefault(sub.name, now) + HOLD_MAX

    def _read_sub(self, sub: _SubagentFile, *, bounded: bool) -> Iterator[Record]:
        sub.new = False
        self._meta_waits.pop(sub.name, None)
        last = self._index(sub.tail, bounded=bounded)
        if last is not None:
            sub.answered = _is_final_answer(last)
        for record in self._read_file(sub.tail, sub.tag, bounded=bounded):
            sub.answered = _is_final_answer(record)
            yield record

    def _index(self, tail: LineTail, *, bounded: bool) -> Record | None:
        """Mark what the file held before the launch processed, without sending it; the last
        record of it read now, if any."""
        last = None
        while tail.known_left and (lines := self._lines(tail, bounded=bounded, known_only=True)):
            for line in lines:
                parsed = parse_line(line)
                if isinstance(parsed, Malformed):
                    self.stats.count_malformed(parsed.reason)
                else:
                    self._fresh(parsed)
                    last = parsed
            if tail.caught_up:
                break
        return last

    def _read_file(self, tail: LineTail, tag: Callable[[], str | None], *, bounded: bool) -> Iterator[Record]:
        while lines := self._lines(tail, bounded=bounded):
            parent = tag()
            for line in lines:
                parsed = parse_line(line, parent_tool_use_id=parent)
                if isinstance(parsed, Malformed):
                    self.stats.count_malformed(parsed.reason)
                elif self._fresh(parsed):
                    yield parsed
            if tail.caught_up:
                return

    def _lines(self, tail: LineTail, *, bounded: bool, known_only: bool = False) -> list[bytes]:
        """The next chunk of lines; when `bounded`, none once this pass's budget is spent."""
        left = self._left
        if left is None:
            return tail.read_lines(known_only=known_only)
        if bounded and left <= 0:
            self.behind = True
            return []
        start = tail.offset
        lines = tail.read_lines(max(_MIN_CHUNK, min(CHUNK, left)), known_only=known_only)
        self._left = left - (tail.offset - start)
        return lines

    def _fresh(self, record: Record) -> bool:
        key = record_key(record)
        if key is not None and not self.processed.insert(key):
            self.stats.duplicates += 1
            return False
        self.stats.records += 1
        if record.invalid_utf8:
            self.stats.invalid_utf8 += 1
        return True

    def _discover(self, main: _MainFile) -> None:
        if main.subagents_dir is None:
            return
        try:
            names = [entry.name for entry in os.scandir(main.subagents_dir)]
        except OSError:
            return
        for name in names:
            if name.startswith(_AGENT_PREFIX) and name.endswith(_JSONL):
                self._subagent(main, name[len(_AGENT_PREFIX) : -len(_JSONL)])

    def _subagent(self, main: _MainFile, agent_id: str) -> _SubagentFile | None:
        sub = main.subagents.get(agent_id)
        if sub is None and main.subagents_dir is not None:
            path = main.subagents_dir / f"{_AGENT_PREFIX}{agent_id}{_JSONL}"
            if not path.exists():
                return None
            tail = LineTail(path, known_size=main.known.get(path, 0))
            sub = _SubagentFile(agent_id, tail, path.with_suffix(".meta.json"), os.fspath(path))
            main.subagents[agent_id] = sub
        return sub
