"""`happy replay`: a Claude transcript (and its subagent files) -> envelopes, one JSON per line.

Envelope times are the records' own timestamps, so a replay is deterministic but for the ids.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.records import Record
from happy_launcher.claude.scanner import TranscriptScanner
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.claude.watch import make_watcher
from happy_launcher.errors import InputFileError
from happy_launcher.protocol import Envelope, IdFactory


@dataclass(slots=True)
class ReplaySummary:
    records: int
    envelopes: int
    duplicates: int
    malformed: dict[str, int]
    mapper: dict[str, object]

    def line(self) -> str:
        parts = [f"happy replay: {self.records} records -> {self.envelopes} envelopes"]
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicate records skipped")
        for reason, count in sorted(self.malformed.items()):
            parts.append(f"{count} malformed lines skipped ({reason})")
        for name, value in self.mapper.items():
            parts.append(f"{name.replace('_', ' ')}: {value}")
        return "; ".join(parts)


class Replay:
    """Maps records with their own timestamps as envelope times."""

    def __init__(self, ids: IdFactory) -> None:
        self.mapper = Mapper(ids)
        self.envelopes = 0
        self._time = 0

    def map(self, records: Iterable[Record]) -> Iterator[list[Envelope]]:
        feed = self.mapper.feed
        for record in records:
            ts = record.timestamp_ms
            if ts is not None:
                self._time = ts
            out = feed(record, self._time)
            if out:
                self.envelopes += len(out)
                yield out

    def finish(self) -> list[Envelope]:
        out = self.mapper.finish(self._time)
        self.envelopes += len(out)
        return out


def open_transcript(path: Path, *, live: bool = False) -> SessionFiles:
    """SessionFiles for one transcript (`live`: still being written), or InputFileError if it
    cannot be read."""
    try:
        with path.open("rb"):
            pass
    except FileNotFoundError:
        raise InputFileError(f"no such transcript: {path}") from None
    except IsADirectoryError:
        raise InputFileError(f"{path} is a directory; give the session's .jsonl file") from None
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    files = SessionFiles(clock=time.monotonic if live else None)
    files.add_main(path)
    return files


def write_envelopes(out: BinaryIO, batches: Iterable[list[Envelope]]) -> None:
    for batch in batches:
        out.write(b"".join(e.to_json() + b"\n" for e in batch))


def replay_file(path: Path, ids: IdFactory, out: BinaryIO) -> ReplaySummary:
    """Replay a finished transcript: map everything, close what is left open, write to `out`."""
    files = open_transcript(path)
    replay = Replay(ids)
    write_envelopes(out, replay.map(files.read_new()))
    write_envelopes(out, replay.map(files.finish()))  # a complete last record without its newline
    write_envelopes(out, [replay.finish()])
    return summarize(files, replay)


def summarize(files: SessionFiles, replay: Replay) -> ReplaySummary:
    return ReplaySummary(
        records=files.stats.records,
        envelopes=replay.envelopes,
        duplicates=files.stats.duplicates,
        malformed=dict(files.stats.malformed),
        mapper=replay.mapper.state.stats.summary(),
    )


async def follow_file(path: Path, ids: IdFactory, out: BinaryIO, summary: list[ReplaySummary]) -> None:
    """Replay, then keep tailing the transcript and its subagent files until cancelled. A turn
    still open stays open (more records may come). `summary` receives the figures on the way out."""
    files = open_transcript(path, live=True)
    replay = Replay(ids)
    watcher = make_watcher()

    async def deliver(batch: list[Record]) -> None:
        write_envelopes(out, replay.map(batch))
        out.flush()

    try:
        await TranscriptScanner(files, watcher).run(deliver)
    finally:
        watcher.close()
        summary.append(summarize(files, replay))
