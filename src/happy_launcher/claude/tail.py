"""Incremental reading of an append-only JSONL file by byte offset: complete lines only.

Claude appends records line by line; a reader may catch a line half-written. The tail keeps the
unfinished end for the next read, notices a file that was truncated or replaced (new inode), and
bounds the size of one line so a runaway writer cannot exhaust memory. `StreamTail` does the same
over a pipe, FIFO or stdin, which cannot be read by offset.

`known_size` is how much of the file was there before Claude was launched: a resumed session's
history. Its lines are read apart (`known_only`), so the caller can tell them from the lines
Claude wrote after the launch however late it starts reading (issue 7).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 1 << 20
# A read of a file kept open, into a buffer of this size: under malloc's mmap threshold (a
# larger one costs an mmap and a munmap a read), and a few of Claude's largest records.
READ_AHEAD = 64 << 10
MAX_LINE = 256 << 20


@dataclass(slots=True)
class TailStats:
    truncated: int = 0
    replaced: int = 0
    oversized: int = 0


@dataclass(slots=True)
class LineTail:
    path: Path
    offset: int = 0
    known_size: int = 0
    max_line: int = MAX_LINE
    stats: TailStats = field(default_factory=TailStats)
    _parts: list[bytes] = field(default_factory=list)
    _partial_size: int = 0
    _skipping: bool = False  # inside an oversized line: drop bytes up to its newline
    _ident: tuple[int, int] | None = None
    _size: int = 0  # the file's size at the last read (one more: more may be there)
    # Keep the file open between reads (closed with the tail): for the few files read once per
    # record Claude writes (its main transcripts), not for every subagent's (descriptors are few).
    keep_open: bool = False
    _fd: int = -1  # the file as last opened, while kept open

    def read_lines(self, chunk: int = CHUNK, *, known_only: bool = False) -> list[bytes]:
        """The complete lines (without newlines) appended since the last call, up to ~`chunk`
        bytes of input; [] when nothing new. Call again until it returns [] or `caught_up`.

        `known_only`: only the lines that end within the first `known_size` bytes; a line still
        unfinished there is completed (and returned) by a later plain call. Read those first."""
        # Kept open: read on without asking the size first (a `stat` is a syscall a record, and
        # costs tens of µs after a pause on this kind of VM); nothing new: look at the path
        # (replaced, or truncated?).
        if self._fd >= 0 and not known_only and (lines := self._lines_from(self._fd, chunk, None)):
            return lines
        opened = self._opened()
        if opened is None:
            return []
        fd, size = opened
        try:
            # Up to the size seen now: no read at the end of the file, no buffer larger than
            # what is there (a 256 KB one costs more than reading a record).
            self._size = size
            return self._lines_from(fd, chunk, min(size, self.known_size) if known_only else size)
        finally:
            if not self.keep_open:
                self._close()

    def _lines_from(self, fd: int, chunk: int, end: int | None) -> list[bytes]:
        """The next complete lines of `fd` from the offset, in reads of at most `chunk`, up to
        `end` (None: as far as the file goes now, which a short read tells)."""
        while True:
            want = min(chunk, READ_AHEAD) if end is None else min(chunk, end - self.offset)
            if want <= 0 or not (data := os.pread(fd, want, self.offset)):
                return []
            self.offset += len(data)
            if end is None:  # a full read may have left more
                self._size = self.offset + (len(data) == want)
            if lines := self._split(data):  # else the middle of a long line: read on
                return lines

    def _opened(self) -> tuple[int, int] | None:
        """(fd, size) of the file at `path` now, None if there is none. Kept open: while the
        path names the file already open, one `stat` replaces an open, fstat and close; a new
        file there (replaced) is opened afresh."""
        if self.keep_open and self._fd >= 0:
            try:
                st = self.path.stat()
            except FileNotFoundError:
                return None
            if (st.st_dev, st.st_ino) == self._ident:
                self._check_identity(st)  # the same file: truncated, perhaps
                return self._fd, st.st_size
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        self._close()
        self._fd = fd
        st = os.fstat(fd)  # this file's own size: the path may have moved on since
        self._check_identity(st)
        return fd, st.st_size

    def _close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __del__(self) -> None:
        self._close()

    @property
    def known_left(self) -> bool:
        """Part of what the file held before the launch is still unread."""
        return self.offset < self.known_size

    @property
    def caught_up(self) -> bool:
        """The last read reached the end of the file as it was then (no need to look again now)."""
        return self.offset >= self._size

    def take_partial(self) -> bytes | None:
        """The unfinished last line, if any (at the end of a finished file: a truncated record)."""
        if not self._parts or self._skipping:
            return None
        line = b"".join(self._parts)
        self._parts.clear()
        self._partial_size = 0
        return line

    def _check_identity(self, st: os.stat_result) -> None:
        ident = (st.st_dev, st.st_ino)
        if self._ident is not None and ident != self._ident:
            self.stats.replaced += 1
            self._reset()
        elif st.st_size < self.offset:
            self.stats.truncated += 1
            self._reset()
        self._ident = ident

    def _reset(self) -> None:
        self.offset = 0
        self.known_size = 0  # a new or rewritten file: all of it is new
        self._parts.clear()
        self._partial_size = 0
        self._skipping = False

    def _split(self, data: bytes) -> list[bytes]:
        lines = data.split(b"\n")
        tail = lines.pop()  # after the last newline: unfinished
        if lines:
            first = lines[0]
            if self._skipping:
                lines.pop(0)
                self._skipping = False
            elif self._parts:
                self._parts.append(first)
                lines[0] = b"".join(self._parts)
                self._parts.clear()
                self._partial_size = 0
        if tail:
            self._hold(tail)
        return [line for line in lines if line]

    def _hold(self, tail: bytes) -> None:
        if self._skipping:
            return
        self._partial_size += len(tail)
        if self._partial_size > self.max_line:
            self.stats.oversized += 1
            self._parts.clear()
            self._partial_size = 0
            self._skipping = True
            return
        self._parts.append(tail)


@dataclass(slots=True, kw_only=True)
class StreamTail(LineTail):
    """Lines of a stream that can be read only once, in order (a pipe, a FIFO, stdin): no offsets,
    no reopening, no truncation to notice. The caller owns `fd`."""

    fd: int

    @property
    def caught_up(self) -> bool:
        return False  # only a read that returns [] tells the end of a stream

    def read_lines(self, chunk: int = CHUNK, *, known_only: bool = False) -> list[bytes]:
        if known_only:
            return []  # a stream has no history known before
        while data := os.read(self.fd, chunk):  # what the writer has written so far, up to chunk
            self.offset += len(data)
            lines = self._split(data)
            if lines:
                return lines
        return []  # end of stream
