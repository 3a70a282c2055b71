"""`happy replay`: a Claude transcript (and its subagent files) -> envelopes, one JSON per line.

Envelope times are the records' own timestamps, so a replay is deterministic but for the ids.
The transcript is a file, read by offset with its subagent files, or a stream (a pipe, a FIFO,
`<(…)`, `-` for stdin), read once to its end. Read to its end, a transcript is finished: the
turn still open is closed (design §2). With --follow it is not: a file is tailed until Ctrl-C,
a stream is read until its writer closes it, and the open turn stays open.
"""

from __future__ import annotations

import itertools
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import anyio

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.records import Record
from happy_launcher.claude.scanner import TranscriptScanner
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.claude.watch import make_watcher
from happy_launcher.errors import InputFileError, OutputError
from happy_launcher.protocol import Envelope, IdFactory
from happy_launcher.session.mirror import Mirror

STDIN = Path("-")
_FILE_BATCH = 64  # records (see _read_to_end)


@dataclass(slots=True)
class ReplaySummary:
    records: int
    envelopes: int
    duplicates: int
    invalid_utf8: int
    malformed: dict[str, int]
    mapper: dict[str, object]

    def line(self) -> str:
        parts = [f"happy replay: {self.records} records -> {self.envelopes} envelopes"]
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicate records skipped")
        if self.invalid_utf8:
            parts.append(f"{self.invalid_utf8} lines with invalid UTF-8 (replaced)")
        for reason, count in sorted(self.malformed.items()):
            parts.append(f"{count} malformed lines skipped ({reason})")
        for name, value in self.mapper.items():
            parts.append(f"{name.replace('_', ' ')}: {value}")
        return "; ".join(parts)


class OutputSink:
    """The envelope sink of a replay: JSON lines to a binary stream, counted. A failed write is
    an `OutputError` (a closed pipe stays `BrokenPipeError`: the reader has what it wanted)."""

    name = "output"

    def __init__(self, out: BinaryIO, *, flush_each: bool = False) -> None:
        self.envelopes = 0
        self._out = out
        self._flush_each = flush_each  # --follow: a reader waits for each envelope

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
        if envelopes:
            self.envelopes += len(envelopes)
            with _output_errors():
                self._out.write(b"".join([e.to_json() + b"\n" for e in envelopes]))
                if self._flush_each:
                    self._out.flush()

    def flush(self) -> None:
        with _output_errors():
            self._out.flush()

    def close(self) -> None:
        """Leaves the stream open: the caller owns it."""


@contextmanager
def _output_errors() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot write the envelopes to the output: {exc.strerror or exc}") from None


def replay_file(
    path: Path, ids: IdFactory, out: BinaryIO, *, follow: bool = False, stdin_fd: int = 0
) -> ReplaySummary:
    """Replay the transcript at `path` (`-`: the stream on `stdin_fd`) to `out` (see the module
    docstring); the summary says what was read, skipped and made."""
    with open_transcript(path, live=follow, stdin_fd=stdin_fd) as (files, is_stream):
        sink = OutputSink(out, flush_each=follow)
        mirror = Mirror(Mapper(ids), sink, clock=None)
        try:
            if follow and not is_stream:
                anyio.run(_follow, files, mirror)
            else:
                _read_to_end(files, mirror, batch=1 if is_stream else _FILE_BATCH)
                if not follow:
                    mirror.finish()
        except KeyboardInterrupt:
            if not follow:
                raise
        sink.flush()
        return _summary(files, sink, mirror)


@contextmanager
def open_transcript(path: Path, *, live: bool, stdin_fd: int) -> Iterator[tuple[SessionFiles, bool]]:
    """The transcript's files, and whether it is a stream; InputFileError if it cannot be read."""
    files = SessionFiles(clock=time.monotonic if live else None)
    if path == STDIN:
        files.add_stream(path, stdin_fd)
        yield files, True
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # a FIFO: waits for its writer, like `cat`
    except FileNotFoundError:
        raise InputFileError(f"no such transcript: {path}") from None
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputFileError(f"{path} is a directory; give the session's .jsonl file")
        if stat.S_ISREG(mode):
            files.add_main(path)  # read by offset (it can be tailed), with its subagent files
        else:
            files.add_stream(path, fd)
        yield files, not stat.S_ISREG(mode)
    finally:
        os.close(fd)


def _read_to_end(files: SessionFiles, mirror: Mirror, *, batch: int) -> None:
    # A stream one record at a time: a slow writer's records are not held back. A file in small
    # batches: the per-write costs are shared, and envelopes still die young (batches of a few
    # hundred records were measured slower: more objects alive for the GC).
    records = files.read_new()
    while chunk := list(itertools.islice(records, batch)):
        mirror.deliver(chunk)
    mirror.deliver(list(files.finish()))  # a complete last record without its newline


async def _follow(files: SessionFiles, mirror: Mirror) -> None:
    watcher = make_watcher()

    def deliver(batch: list[Record]) -> None:
        mirror.deliver(batch)

    try:
        await TranscriptScanner(files, watcher).run(deliver)
    finally:
        watcher.close()


def _summary(files: SessionFiles, sink: OutputSink, mirror: Mirror) -> ReplaySummary:
    return ReplaySummary(
        records=files.stats.records,
        envelopes=sink.envelopes,
        duplicates=files.stats.duplicates,
        invalid_utf8=files.stats.invalid_utf8,
        malformed=dict(files.stats.malformed),
        mapper=mirror.mapper.state.stats.summary(),
    )
