"""The session's one ordered commit point (design §5): envelopes, the transcript keys they were
made from and the mapper state go into the store in one transaction; only what the store has
committed is then passed on, in seq order, to the best-effort sinks (the events file) and to
the subscribers. A store outage never lets anything downstream get ahead of the store.
Inbound messages Claude has taken are marked delivered in the same transaction as the batch
that holds their user text (`delivered`, drained at each write).

Records that map to nothing (most of them in a TUI session: attachments, hook output) are
not a transaction each: their keys, and the mapper state they leave, go with the next batch
that commits (at most `HOLD_KEYS` of them, and at the close). Nothing is shown for them, so
nothing waits; and a crash before that commit loses nothing: the restart reads them again
from the transcript and maps them from the last committed state, which is the state they were
first mapped from, to the same nothing (the mapper is deterministic)."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from happy_launcher.errors import StoreConflictError, StoreError
from happy_launcher.protocol import Envelope
from happy_launcher.session.ports import CommitSubscriber
from happy_launcher.session.sinks import EnvelopeSink
from happy_launcher.store.resume import Delivered

_LOG = logging.getLogger("happy_launcher.sinks")
DEFAULT_BACKLOG_LIMIT = 10_000
HOLD_KEYS = 256  # keys of records that made no envelope, held for the next commit at most


class DurableStore(Protocol):
    """What the commit point needs of `SessionStore` (one session's slice of it)."""

    def append_envelopes(
        self,
        session_id: str,
        envelopes: Sequence[Envelope],
        processed_keys: Sequence[str] = (),
        *,
        mapper_state: str | None = None,
        delivered: Sequence[Delivered] = (),
    ) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class CommitStats:
    backlog: int  # envelopes and keys waiting for the store to recover
    dropped: int  # envelopes the store will never get (backlog full, or rejected)
    disabled: tuple[str, ...]  # names of the best-effort sinks that failed
    failures: tuple[str, ...] = ()  # "<name>: <error>" for each of them, to tell the user


@dataclass(frozen=True, slots=True)
class _Batch:
    envelopes: tuple[Envelope, ...]
    keys: tuple[str, ...]
    state: str | None  # the mapper state right after these envelopes were made
    delivered: tuple[Delivered, ...] = ()  # inbound messages Claude took, marked with them

    @property
    def size(self) -> int:
        return len(self.envelopes) + len(self.keys) + len(self.delivered)


class CommitPoint:
    """Commits each batch, then passes it on; never raises to the caller (`write`).

    The store is never given up on, because losing envelopes there is what it exists to
    prevent: a batch that fails with a retryable error (disk full, locked, I/O) waits in an
    in-memory backlog and is retried, in order, before the next batch. The backlog is bounded
    (`backlog_limit` envelopes + keys); when full, new batches are dropped, so the store keeps a
    gap-free prefix, and the drop is counted and logged. Dropped keys stay unprocessed, so a
    restart maps those transcript records again. A batch the store rejects for good
    (`StoreConflictError`, or a non-store error: a bug) is dropped and logged.
    Best-effort sinks are disabled after their first error, logged once. Not thread-safe.
    """

    def __init__(
        self,
        store: DurableStore,
        session_id: str,
        sinks: Sequence[EnvelopeSink] = (),
        *,
        state: Callable[[], str] | None = None,
        delivered: Callable[[], tuple[Delivered, ...]] | None = None,
        log: logging.Logger = _LOG,
        backlog_limit: int = DEFAULT_BACKLOG_LIMIT,
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._sinks = list(sinks)
        self._state = state
        self._delivered = delivered
        self._subscribers: list[CommitSubscriber] = []
        self._log = log
        self._backlog_limit = backlog_limit
        self._backlog: deque[_Batch] = deque()
        self._backlog_size = 0
        self._failing = False  # between the store's first failure and its recovery
        self._dropping = False  # the backlog overflowed during the current outage
        self._dropped = 0
        self._disabled: dict[int, str] = {}  # index of a failed best-effort sink -> why
        self._closed = False
        # The mapper state this commit point last committed: a batch that leaves it as it was
        # does not write it again (one statement and one page of WAL less per record, in a
        # turn's long middle). Only this session's commit point writes its state.
        self._saved_state: str | None = None
        self._held: list[str] = []  # keys of records that made nothing, for the next commit

    @property
    def stats(self) -> CommitStats:
        names = [str(getattr(self._sinks[i], "name", type(self._sinks[i]).__name__)) for i in self._disabled]
        return CommitStats(
            backlog=self._backlog_size,
            dropped=self._dropped,
            disabled=tuple(names),
            failures=tuple(f"{n}: {why}" for n, why in zip(names, self._disabled.values(), strict=True)),
        )

    def subscribe(self, subscriber: CommitSubscriber) -> Callable[[], None]:
        """Add a subscriber; returns the function that removes it."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def write(self, envelopes: Sequence[Envelope], processed_keys: Sequence[str] = ()) -> None:
        if self._closed:
            self._log.error("envelopes written after the session was closed (a bug in happy): dropped")
            return
        if self._backlog:
            self._drain()  # older batches first: the store keeps the order of the stream
        delivered = self._delivered() if self._delivered is not None else ()
        if not envelopes and not delivered and len(self._held) + len(processed_keys) < HOLD_KEYS:
            self._held += processed_keys  # held (see the module's docstring); none: a chance to retry
            return
        keys, self._held = (*self._held, *processed_keys), []
        self._commit(tuple(envelopes), keys, delivered)

    def _commit(
        self, envelopes: tuple[Envelope, ...], keys: tuple[str, ...], delivered: tuple[Delivered, ...]
    ) -> None:
        state = self._state() if self._state is not None else None
        batch = _Batch(envelopes, keys, state, delivered)
        if self._backlog and self._backlog_size + batch.size > self._backlog_limit:
            self._dropped += len(batch.envelopes)
            if not self._dropping:  # once per outage; the recovery line gives the total
                self._dropping = True
                self._log.error("store: backlog full, dropping new envelopes until it recovers")
            return
        still_failing = bool(self._backlog)
        self._backlog.append(batch)
        self._backlog_size += batch.size
        if not still_failing:  # no point retrying a store that failed a moment ago
            self._drain()

    def close(self) -> None:
        """Retry the backlog once more, report what is still unstored, close the sinks."""
        if self._closed:
            return
        self._closed = True
        if self._held:
            keys, self._held = tuple(self._held), []
            self._commit((), keys, ())
        if self._backlog:
            self._drain()
        if self._backlog:
            lost = sum(len(b.envelopes) for b in self._backlog)
            self._dropped += lost
            self._log.error("store: %d envelopes could not be written and are lost", lost)
        for i, sink in enumerate(self._sinks):
            try:
                sink.close()
            except Exception as exc:
                if i in self._disabled:
                    self._log.error("%s: closing failed: %s", _name(sink), exc)
                else:  # a failure it could only tell now (a sink writing in the background)
                    self._disable(i, sink, exc)

    def _drain(self) -> None:
        written = 0
        while self._backlog:
            head = self._backlog[0]
            try:
                seqs = self._store.append_envelopes(
                    self._session_id,
                    head.envelopes,
                    head.keys,
                    mapper_state=None if head.state == self._saved_state else head.state,
                    delivered=head.delivered,
                )
            except Exception as exc:
                if _retryable(exc):
                    self._mark_failing(exc)
                    return
                self._dropped += len(head.envelopes)
                self._log.error("store rejected %d envelopes, dropped: %s", len(head.envelopes), exc)
            else:
                written += len(head.envelopes)
                if head.state is not None:
                    self._saved_state = head.state
                self._pass_on(seqs, head.envelopes)
            self._backlog.popleft()
            self._backlog_size -= head.size
        if self._failing:
            self._failing = self._dropping = False
            self._log.warning(
                "store recovered: %d delayed envelopes written, %d dropped so far", written, self._dropped
            )

    def _pass_on(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        if not envelopes:
            return
        for i, sink in enumerate(self._sinks):
            if i in self._disabled:
                continue
            try:
                sink.write(envelopes)
            except Exception as exc:
                self._disable(i, sink, exc)
        for subscriber in list(self._subscribers):
            subscriber.committed(seqs, envelopes)

    def _disable(self, i: int, sink: EnvelopeSink, exc: Exception) -> None:
        self._disabled[i] = _describe(exc)
        self._log.error("%s failed and is disabled for the rest of the session: %s", _name(sink), exc)

    def _mark_failing(self, exc: Exception) -> None:
        if not self._failing:  # one line per outage, not one per retry
            self._failing = True
            self._log.error("store failed: %s; keeping envelopes in memory and retrying", exc)


def _name(sink: EnvelopeSink) -> str:
    return str(getattr(sink, "name", type(sink).__name__))


def _retryable(exc: Exception) -> bool:
    # A conflict fails the same way every time, and so does a non-store error (a bug); disk
    # full, a lock held too long or an I/O error may pass on a later try.
    return isinstance(exc, StoreError | OSError) and not isinstance(exc, StoreConflictError)


def _describe(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
