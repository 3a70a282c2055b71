"""Best-effort places envelopes go once the store has committed them (`commit.py`): a JSON-lines
file or descriptor, and the test fake. A sink failure (disk full, a closed pipe) is logged and
never reaches the Claude session."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence
from typing import Protocol

from happy_launcher.protocol import Envelope
from happy_launcher.session.events_output import EventsOutput
from happy_launcher.terminal.fdio import write_all

_LOG = logging.getLogger("happy_launcher.sinks")


class EnvelopeSink(Protocol):
    """Receives batches of envelopes in order, with the transcript keys they were made from.

    Optional attribute: `name: str` (for log lines; default: the class name).
    """

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None: ...

    def close(self) -> None: ...


class JsonLinesSink:
    """Appends one compact envelope JSON per line to an `EventsOutput` (a file or an fd).

    Writes go straight to the file descriptor, one `os.write` per batch: nothing sits in a
    user-space buffer, so a reader sees every batch at once and a crash loses no written line.
    A reader that closes the pipe (`| head`) disables the sink with one log line.
    """

    def __init__(self, output: EventsOutput) -> None:
        self._output = output
        self.name = output.name
        self._disabled = False

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
        if self._disabled or not envelopes:
            return
        data = b"".join([env.to_json() + b"\n" for env in envelopes])
        try:
            write_all(self._output.fd, data)
        except BrokenPipeError:
            self._disabled = True
            _LOG.warning("%s: the reader closed the pipe; no more envelopes are written there", self.name)

    def close(self) -> None:
        self._output.close()


class MemorySink:
    """The test fake: keeps everything; set `fail_with` to make the next writes raise it."""

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.envelopes: list[Envelope] = []
        self.keys: list[str] = []
        self.fail_with: Exception | None = None
        self.closed = False

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.envelopes.extend(envelopes)
        self.keys.extend(processed_keys)

    def close(self) -> None:
        self.closed = True


class BackgroundSink:
    """Writes another sink's batches from a thread of its own, in order, so that a slow reader (a
    pipe drained slowly) never holds up the session's event loop, and with it Claude's messages
    (a regular file is written in line: `EventsOutput.regular`). A failure in the thread is
    raised by the next `write` or by `close`; so is a backlog beyond `limit` envelopes (the
    reader is too slow to keep up)."""

    def __init__(self, sink: EnvelopeSink, *, limit: int = 100_000, close_wait: float = 5.0) -> None:
        self._sink = sink
        self.name = str(getattr(sink, "name", type(sink).__name__))
        self._limit = limit
        self._close_wait = close_wait
        self._batches: queue.SimpleQueue[tuple[Envelope, ...] | None] = queue.SimpleQueue()
        self._waiting = 0  # envelopes queued and not written yet
        self._lock = threading.Lock()
        self._failure: Exception | None = None
        self._thread: threading.Thread | None = None

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
        if self._failure is not None:
            raise self._failure
        if not envelopes:
            return
        with self._lock:
            if self._waiting + len(envelopes) > self._limit:
                raise OSError(f"its reader is too slow ({self._waiting} envelopes waiting)")
            self._waiting += len(envelopes)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"sink {self.name}", daemon=True)
            self._thread.start()
        self._batches.put(tuple(envelopes))

    def close(self) -> None:
        """Write what is queued (waiting at most `close_wait` seconds), then close the sink."""
        if self._thread is not None:
            self._batches.put(None)
            self._thread.join(self._close_wait)
            if self._thread.is_alive() and self._failure is None:
                self._failure = OSError(f"{self._waiting} envelopes were still waiting for the reader")
        self._sink.close()
        if self._failure is not None:
            raise self._failure

    def _run(self) -> None:
        while (batch := self._batches.get()) is not None:
            if self._failure is None:
                try:
                    self._sink.write(batch)
                except Exception as exc:
                    self._failure = exc
            with self._lock:
                self._waiting -= len(batch)
