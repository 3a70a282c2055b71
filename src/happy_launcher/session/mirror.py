"""The session's mirror: records in, envelopes out to the sinks, one mapper for the whole run.

Shared by every launcher of a session, so switching launchers keeps the turn, the subagents
and the dedupe keys (design §5); `happy replay` runs the same loop over a finished transcript.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableSet, Sequence
from contextlib import contextmanager

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.records import Record, record_key
from happy_launcher.protocol import Clock, Envelope, TurnStatus
from happy_launcher.session.inbound import InboundLedger
from happy_launcher.session.sinks import EnvelopeSink


class Mirror:
    """Maps records through one mapper and writes each batch's envelopes, with the dedupe keys
    of its records, to one sink.

    Envelope times (design §1): with a `clock`, the time the batch is mapped (live); with
    None, each record's own `timestamp` (replay), or the last one seen for records without.
    """

    def __init__(
        self,
        mapper: Mapper,
        sink: EnvelopeSink,
        clock: Clock | None,
        *,
        seen: MutableSet[str] | None = None,
        inbound: InboundLedger | None = None,
    ) -> None:
        self.mapper = mapper
        self._sink = sink
        self._clock = clock
        self._record_time = 0  # replay: the last record timestamp seen
        # Keys of the records mapped so far, when records may arrive more than once (two feeds,
        # a continued session): the first arrival wins, later copies are skipped.
        self._seen = seen
        self._pending: tuple[list[Envelope], list[str]] | None = None  # inside `batch`
        # Prompts of inbound messages: the record of one, read from the transcript (again or
        # not), tells Claude took it; the sink commits the delivery with this batch.
        self._inbound = inbound

    def deliver(self, records: Iterable[Record]) -> list[Envelope]:
        """Map records and write their envelopes together with their dedupe keys."""
        envelopes: list[Envelope] = []
        keys: list[str] = []
        feed, clock, seen = self.mapper.feed, self._clock, self._seen
        now = clock() if clock is not None else self._record_time
        inbound = self._inbound if self._inbound is not None and self._inbound.waiting else None
        for record in records:
            key = record_key(record)
            fresh = key is None or seen is None or key not in seen
            again = key is not None and inbound is not None and inbound.seen(record, key, now, fresh=fresh)
            if not fresh:
                continue
            if key is not None and seen is not None:
                seen.add(key)
            if clock is None and (stamp := record.timestamp_ms) is not None:
                now = stamp
            out = feed(record, now)
            if again:  # its user text was shown when Claude first took the message
                out = [e for e in out if not (e.role == "user" and e.claudeUuid == key)]
            envelopes += out
            if key is not None:
                keys.append(key)
        if clock is None:
            self._record_time = now
        self._emit(envelopes, keys)
        return envelopes

    @contextmanager
    def batch(self) -> Iterator[None]:
        """What is written inside goes to the sink in one write at the end (one store
        transaction), in order: the ordered queue applies the items it took at once."""
        if self._pending is not None:
            yield
            return
        pending: tuple[list[Envelope], list[str]] = ([], [])
        self._pending = pending
        try:
            yield
        finally:
            self._pending = None
            self._emit(*pending)

    def close_turn(self, status: TurnStatus) -> list[Envelope]:
        """End what is open (active subagents, then the turn) with `status`."""
        return self._write(self.mapper.close_turn(status, self._now()))

    def prompt_sent(self, text: str, uuid: str | None = None, *, taken: bool = True) -> list[Envelope]:
        """Remote mode sent Claude a prompt: its user text and turn start (design §4). Sent
        with a `uuid`, Claude writes its record under that key: processed now, so the
        transcript's copy is skipped. `taken`: that record is on disk (an inbound message's
        delivery is committed with these envelopes); else it is when the tail brings it. A
        prompt sent again under a uuid already processed (not taken the first time) starts a
        turn without repeating its user text, as does a message delivered again (its text was
        shown when Claude first took it)."""
        now = self._now()
        if uuid is not None and (
            (self._seen is not None and uuid in self._seen)
            or (self._inbound is not None and self._inbound.again(uuid))
        ):
            text = ""
        envelopes = self.mapper.prompt_sent(text, now, uuid)
        if uuid is not None and taken and self._inbound is not None:
            self._inbound.taken(uuid, now)
        if uuid is not None and self._seen is not None:
            self._seen.add(uuid)
        self._emit(envelopes, [uuid] if uuid is not None else [])
        return envelopes

    def end_turn(
        self, status: TurnStatus, service: str | None = None, *, taken: tuple[str, ...] | None = None
    ) -> list[Envelope]:
        """A turn result (remote mode): end the open turn, if it is the result's (see Mapper)."""
        return self._write(self.mapper.end_turn(status, self._now(), service, taken=taken))

    def notice(self, text: str) -> list[Envelope]:
        """A service note of happy's own (see `Mapper.notice`)."""
        return self._write(self.mapper.notice(text, self._now()))

    def finish(self) -> list[Envelope]:
        """The transcript is finished (replay): close what is open by the rule of design §2."""
        return self._write(self.mapper.finish(self._now()))

    def write(self, envelopes: Sequence[Envelope]) -> None:
        """Write envelopes made outside `deliver` (e.g. by the mapper for a prompt sent remotely)."""
        self._write(list(envelopes))

    @property
    def turn(self) -> str | None:
        """The open turn's id, if any."""
        return self.mapper.state.turn

    def _now(self) -> int:
        return self._clock() if self._clock is not None else self._record_time

    def _write(self, envelopes: list[Envelope]) -> list[Envelope]:
        self._emit(envelopes, [])
        return envelopes

    def _emit(self, envelopes: list[Envelope], keys: list[str]) -> None:
        if self._pending is not None:
            self._pending[0].extend(envelopes)
            self._pending[1].extend(keys)
        elif envelopes or keys or (self._inbound is not None and self._inbound.ready):
            self._sink.write(envelopes, keys)
