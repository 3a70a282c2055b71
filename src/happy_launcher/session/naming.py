"""What a session is about, in one line: Claude's own title for it when it has one (a name given
with `/rename`, else the title Claude made, else an older version's summary), else its first
prompt. Shared by `happy sessions` and the web page's list.

Claude's titles live only in its transcript, as bookkeeping records (`custom-title`, `ai-title`,
`summary`), the last of each kind standing. A transcript grows to megabytes, so it is read once
and then on from where the last read stopped (`TranscriptTitles`)."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import IO

from happy_launcher.claude.titles import MAX_TITLE, SESSION_TITLE_FIELDS, session_title_record, truncate

_TITLE_RECORD = re.compile(rb'"type":"(?:custom-title|ai-title|summary)"')
_CHUNK = 1 << 20


def one_line(text: str, limit: int = MAX_TITLE) -> str | None:
    """The first line of `text` that is not blank, cut to `limit` characters; an ellipsis says
    that something was left out (the rest of the line, or the lines after it)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    first = truncate(lines[0], limit)
    return first if len(lines) == 1 or first.endswith("…") else first + " …"


def session_title(first_prompt: str | None, transcript: str | None, titles: TranscriptTitles) -> str | None:
    """The session's one-line title (None: nothing to name it by yet)."""
    claude = titles.title(transcript) if transcript else None
    if claude is not None:
        return one_line(claude)
    return one_line(first_prompt) if first_prompt else None


class _Scan:
    # A plain class, not a dataclass: `happy sessions` starts without loading `dataclasses`.
    __slots__ = ("found", "inode", "offset")

    def __init__(self, inode: int) -> None:
        self.inode = inode
        self.offset = 0  # how far the file has been read (whole lines only)
        self.found: dict[str, str] = {}  # kind -> its last value


class TranscriptTitles:
    """Claude's title of each transcript asked about, reading only what was added since the last
    call (a file replaced or cut shorter is read again from its start)."""

    def __init__(self) -> None:
        self._scans: dict[str, _Scan] = {}
        self._lock = threading.Lock()  # the web server reads from worker threads, one at a time

    def title(self, path: str) -> str | None:
        with self._lock:
            return self._title(path)

    def _title(self, path: str) -> str | None:
        try:
            with Path(path).open("rb") as file:
                stat = os.fstat(file.fileno())
                inode, size = stat.st_ino, stat.st_size
                scan = self._scans.get(path)
                if scan is None or scan.inode != inode or scan.offset > size:
                    scan = self._scans[path] = _Scan(inode)
                file.seek(scan.offset)
                _read_on(file, scan)
        except OSError:
            return None  # gone or unreadable: the session is named by its first prompt
        return next((scan.found[kind] for kind in SESSION_TITLE_FIELDS if kind in scan.found), None)


def _read_on(file: IO[bytes], scan: _Scan) -> None:
    rest = b""  # the start of a line read in part (`scan.offset` is where it starts)
    while chunk := file.read(_CHUNK):
        data = rest + chunk
        end = data.rfind(b"\n") + 1  # a line still being written is read next time, whole
        for match in _TITLE_RECORD.finditer(data, 0, end):
            start = data.rfind(b"\n", 0, match.start()) + 1
            _note(data[start : data.index(b"\n", match.end())], scan)
        scan.offset += end
        rest = data[end:]


def _note(line: bytes, scan: _Scan) -> None:
    found = session_title_record(line)
    if found is None:
        return
    kind, value = found
    if value.strip():
        scan.found[kind] = value
    else:  # Claude clears a name by writing an empty one
        scan.found.pop(kind, None)
