"""Best-effort places envelopes go once the store has committed them (`commit.py`): a JSON-lines
file or descriptor, and the test fake. A sink failure (disk full, a closed pipe) is logged and
never reaches the Claude session."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from happy_launcher.fdio import write_all
from happy_launcher.protocol import Envelope
from happy_launcher.session.events_output import EventsOutput

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
