"""Where envelopes go: the session store, a JSON-lines file or stdout, and the fan-out over them.

A sink failure (disk full, a closed pipe) is logged and never reaches the Claude session:
`FanOut.write` does not raise.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from happy_launcher.errors import StoreConflictError, StoreError
from happy_launcher.fdio import write_all
from happy_launcher.protocol import Envelope
from happy_launcher.session.events_output import EventsOutput
from happy_launcher.session.store import SessionStore

_LOG = logging.getLogger("happy_launcher.sinks")
DEFAULT_BACKLOG_LIMIT = 10_000


class EnvelopeSink(Protocol):
    """Receives batches of envelopes in order, with the transcript keys they were made from.

    Optional attributes that `FanOut` honours: `name: str` (for log lines; default: the class
    name) and `durable: bool` (default False; see `FanOut`).
    """

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None: ...

    def close(self) -> None: ...


class StoreSink:
    """Commits each batch and its processed keys in one store transaction."""

    name = "store"
    durable = True

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self._store = store
        self._session_id = session_id

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
        self._store.append_envelopes(self._session_id, envelopes, processed_keys)

    def close(self) -> None:
        """Leaves the store open: the session owns it (it also holds mapper state and inbound)."""


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

    def __init__(self, name: str = "memory", *, durable: bool = False) -> None:
        self.name = name
        self.durable = durable
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


@dataclass(frozen=True, slots=True)
class FanOutStats:
    backlog: int  # envelopes and keys waiting for a durable sink to recover
    dropped: int  # envelopes a durable sink will never get (backlog full, or rejected)
    disabled: tuple[str, ...]  # names of the best-effort sinks that failed
    failures: tuple[str, ...] = ()  # "<name>: <error>" for each of them, to tell the user


@dataclass(frozen=True, slots=True)
class _Batch:
    envelopes: tuple[Envelope, ...]
    keys: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.envelopes) + len(self.keys)


class _Slot:
    def __init__(self, sink: EnvelopeSink) -> None:
        self.sink = sink
        self.name = str(getattr(sink, "name", type(sink).__name__))
        self.durable = getattr(sink, "durable", False) is True
        self.backlog: deque[_Batch] = deque()
        self.backlog_size = 0
        self.failing = False  # a durable sink between its first failure and its recovery
        self.dropping = False  # its backlog overflowed during the current outage
        self.disabled = False  # a best-effort sink that failed once
        self.failure = ""  # why it was disabled


class FanOut:
    """Writes each batch to every sink, durable sinks first; never raises to the caller.

    Best-effort sinks (files, stdout) are disabled after their first error, logged once.
    Durable sinks (the store) are never disabled, because losing envelopes there is what the
    store exists to prevent: a batch that fails with a retryable error (disk full, locked,
    I/O) waits in an in-memory backlog and is retried, in order, before the next batch. The
    backlog is bounded (`backlog_limit` envelopes + keys); when full, new batches are dropped,
    so the store keeps a gap-free prefix and the drop is counted and logged. Dropped keys stay
    unprocessed, so a restart maps those transcript records again. A batch the store rejects
    for good (`StoreConflictError`, or a non-store error: a bug) is dropped and logged.
    Not thread-safe: one writer.
    """

    def __init__(
        self,
        sinks: Sequence[EnvelopeSink],
        log: logging.Logger = _LOG,
        *,
        backlog_limit: int = DEFAULT_BACKLOG_LIMIT,
    ) -> None:
        slots = [_Slot(sink) for sink in sinks]
        # The store first: design §5 stores an envelope before delivering it anywhere.
        self._slots = [s for s in slots if s.durable] + [s for s in slots if not s.durable]
        self._log = log
        self._backlog_limit = backlog_limit
        self._dropped = 0
        self._closed = False

    @property
    def stats(self) -> FanOutStats:
        return FanOutStats(
            backlog=sum(s.backlog_size for s in self._slots),
            dropped=self._dropped,
            disabled=tuple(s.name for s in self._slots if s.disabled),
            failures=tuple(f"{s.name}: {s.failure}" for s in self._slots if s.disabled),
        )

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
        if self._closed:
            self._log.error("envelopes written after the sinks were closed (a bug in happy): dropped")
            return
        batch = _Batch(tuple(envelopes), tuple(processed_keys))
        for slot in self._slots:
            if slot.durable:
                self._write_durable(slot, batch)
            elif batch.envelopes and not slot.disabled:
                self._write_best_effort(slot, batch)

    def close(self) -> None:
        """Retry the backlog once more, report what is still unstored, close every sink."""
        if self._closed:
            return
        self._closed = True
        for slot in self._slots:
            if slot.backlog:
                self._drain(slot)
            if slot.backlog:
                lost = sum(len(b.envelopes) for b in slot.backlog)
                self._dropped += lost
                self._log.error("%s: %d envelopes could not be written and are lost", slot.name, lost)
            try:
                slot.sink.close()
            except Exception as exc:
                self._log.error("%s: closing failed: %s", slot.name, exc)

    def _write_best_effort(self, slot: _Slot, batch: _Batch) -> None:
        try:
            slot.sink.write(batch.envelopes, batch.keys)
        except Exception as exc:
            slot.disabled = True
            slot.failure = _describe(exc)
            self._log.error("%s failed and is disabled for the rest of the session: %s", slot.name, exc)

    def _write_durable(self, slot: _Slot, batch: _Batch) -> None:
        if slot.backlog:
            self._drain(slot)  # older batches first: the store keeps the order of the stream
        if batch.size == 0:  # an empty write is just a chance to retry the backlog
            return
        if slot.backlog and slot.backlog_size + batch.size > self._backlog_limit:
            self._dropped += len(batch.envelopes)
            if not slot.dropping:  # once per outage; the recovery line gives the total
                slot.dropping = True
                self._log.error("%s: backlog full, dropping new envelopes until it recovers", slot.name)
            return
        still_failing = bool(slot.backlog)
        slot.backlog.append(batch)
        slot.backlog_size += batch.size
        if not still_failing:  # no point retrying a sink that failed a moment ago
            self._drain(slot)

    def _drain(self, slot: _Slot) -> None:
        written = 0
        while slot.backlog:
            head = slot.backlog[0]
            try:
                slot.sink.write(head.envelopes, head.keys)
            except Exception as exc:
                if _retryable(exc):
                    self._mark_failing(slot, exc)
                    return
                self._dropped += len(head.envelopes)
                self._log.error("%s rejected %d envelopes, dropped: %s", slot.name, len(head.envelopes), exc)
            else:
                written += len(head.envelopes)
            slot.backlog.popleft()
            slot.backlog_size -= head.size
        if slot.failing:
            slot.failing = slot.dropping = False
            self._log.warning(
                "%s recovered: %d delayed envelopes written, %d dropped so far",
                slot.name,
                written,
                self._dropped,
            )

    def _mark_failing(self, slot: _Slot, exc: Exception) -> None:
        if not slot.failing:  # one line per outage, not one per retry
            slot.failing = True
            self._log.error("%s failed: %s; keeping envelopes in memory and retrying", slot.name, exc)


def _retryable(exc: Exception) -> bool:
    # A conflict fails the same way every time, and so does a non-store error (a bug); disk
    # full, a lock held too long or an I/O error may pass on a later try.
    return isinstance(exc, StoreError | OSError) and not isinstance(exc, StoreConflictError)


def _describe(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
