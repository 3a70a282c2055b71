"""The session's mirror: records in, envelopes out to the sinks, one mapper for the whole run.

Shared by every launcher of a session, so switching launchers keeps the turn, the subagents
and the dedupe keys (design §5).
"""

from __future__ import annotations

from collections.abc import Iterable

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.records import Record, record_key
from happy_launcher.protocol import Clock, Envelope, TurnStatus
from happy_launcher.session.sinks import EnvelopeSink


class Mirror:
    def __init__(self, mapper: Mapper, sink: EnvelopeSink, clock: Clock) -> None:
        self.mapper = mapper
        self._sink = sink
        self._clock = clock

    def deliver(self, records: Iterable[Record]) -> list[Envelope]:
        """Map records and write their envelopes together with their dedupe keys."""
        envelopes: list[Envelope] = []
        keys: list[str] = []
        feed, now = self.mapper.feed, self._clock()
        for record in records:
            envelopes += feed(record, now)
            key = record_key(record)
            if key is not None:
                keys.append(key)
        if envelopes or keys:
            self._write(envelopes, keys)
        return envelopes

    def close_turn(self, status: TurnStatus) -> list[Envelope]:
        """End what is open (active subagents, then the turn) with `status`."""
        envelopes = self.mapper.close_turn(status, self._clock())
        if envelopes:
            self._write(envelopes, [])
        return envelopes

    def _write(self, envelopes: list[Envelope], keys: list[str]) -> None:
        self._sink.write(envelopes, keys)
