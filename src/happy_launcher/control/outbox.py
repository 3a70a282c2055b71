"""What the control server has to send one client, and the task that sends it.

The session's callbacks (commits, permission events) run on the event loop and must never wait
for a client: they only `put` a line here. A line put while nothing is queued or being sent
goes to the socket at once, as far as it takes it without waiting (a commit with 10 clients
woke 10 writer tasks, ~50 µs of CPU each); the rest is the writer task's. The queue is bounded
in bytes; a client that lets it overflow is dropped: what is queued for it is discarded (but
the end of a line the socket took the start of), it gets a `dropped` line, and the connection
closes (at the latest `grace` seconds later, if it does not even read that). The store has
everything, so the client loses nothing by subscribing again from its last seq."""

from __future__ import annotations

from collections import deque
from typing import Protocol

import anyio

from happy_launcher.control.framing import encode
from happy_launcher.control.link import DROP_GRACE, OUTBOX_LIMIT
from happy_launcher.control.wire import Dropped

_NEWLINE = ord("\n")


class Sender(Protocol):
    async def send(self, data: bytes) -> None: ...

    def send_now(self, data: bytes) -> int:
        """What it takes of `data` without waiting (0: nothing now)."""
        ...


class Outbox:
    def __init__(self, limit: int = OUTBOX_LIMIT, grace: float = DROP_GRACE) -> None:
        self.limit = limit
        self._grace = grace
        self._lines: deque[bytes] = deque()
        self._size = 0
        self._wake = anyio.Event()
        self._space = anyio.Event()
        self._closed = False
        self._sender: Sender | None = None  # while idle (nothing queued, nothing being sent)
        # The first queued item is the end of a line the socket took only part of: it is sent
        # even if the client is dropped, or the client would read the `dropped` line glued to
        # half an envelope, miss it, and take the closed connection for the session's end.
        self._cut = False
        self.dropped: str | None = None  # why, once dropped
        self._scope = anyio.CancelScope()

    @property
    def size(self) -> int:
        return self._size

    @property
    def accepting(self) -> bool:
        return self.dropped is None and not self._closed

    def put(self, line: bytes) -> None:
        """Queue a line; never waits (drops the client instead)."""
        if not self.accepting:
            return
        if self._sender is not None and not self._lines:
            sent = self._sender.send_now(line)
            if sent == len(line):
                return
            if sent and line[sent - 1] != _NEWLINE:
                end = line.find(b"\n", sent) + 1 or len(line)
                self._queue(line[sent:end])  # over the limit or not: its start is sent
                self._cut = True
                sent = end
            line = line[sent:]
            if not line:
                return
        if self._size + len(line) > self.limit:
            self.drop(f"more than {self.limit} bytes were waiting for this client")
            return
        self._queue(line)

    def _queue(self, line: bytes) -> None:
        self._lines.append(line)
        self._size += len(line)
        self._wake.set()

    async def put_paced(self, line: bytes) -> None:
        """Queue a line once the queue is under half full: history goes at the client's pace,
        leaving room for live lines."""
        while self._size > self.limit // 2 and self.accepting:
            self._space = anyio.Event()
            await self._space.wait()
        self.put(line)

    def drop(self, why: str) -> None:
        if self.dropped is not None:
            return
        self.dropped = why
        cut = self._lines[0] if self._cut else b""
        self._lines.clear()
        self._size = 0
        if cut:
            self._queue(cut)
        self._scope.deadline = anyio.current_time() + self._grace
        self._wake.set()
        self._space.set()

    def close(self) -> None:
        """Send what is queued, then stop."""
        self._closed = True
        self._wake.set()
        self._space.set()

    async def run(self, stream: Sender) -> None:
        """Send lines until closed (and drained) or dropped; the caller then closes the stream."""
        with self._scope:
            while True:
                if not self._lines:
                    if self._closed or self.dropped is not None:
                        break
                    self._wake = anyio.Event()
                    self._sender = stream
                    try:
                        await self._wake.wait()
                    finally:
                        self._sender = None
                    continue
                batch = b"".join(self._lines)
                self._lines.clear()
                self._size = 0
                self._cut = False
                self._space.set()
                await stream.send(batch)
            if self.dropped is not None:
                await stream.send(encode(Dropped(message=self.dropped)))
