"""The session's mirror: records in, envelopes out to the sinks, one mapper for the whole run.

Shared by every launcher of a session, so switching launchers keeps the turn, the subagents
and the dedupe keys (design §5).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from happy_launcher.claude.mapper import INTERRUPT_TEXTS, Mapper
from happy_launcher.claude.records import Record, record_key, text_of
from happy_launcher.protocol import (
    Clock,
    Cuid2Ids,
    Envelope,
    EnvelopeFactory,
    IdFactory,
    TurnEndEv,
    TurnStartEv,
    TurnStatus,
)
from happy_launcher.session.sinks import EnvelopeSink


@dataclass(slots=True)
class MirrorStats:
    records: int = 0
    envelopes: int = 0
    turns_closed: dict[str, int] = field(default_factory=dict)


class Mirror:
    def __init__(
        self, mapper: Mapper, sink: EnvelopeSink, clock: Clock, ids: IdFactory | None = None
    ) -> None:
        self.mapper = mapper
        self._sink = sink
        self._clock = clock
        self._make = EnvelopeFactory(ids if ids is not None else Cuid2Ids())
        self.stats = MirrorStats()
        # A prompt was mirrored and nothing has answered it yet: the mapper opens a turn only with the
        # first agent output, and Claude writes an assistant record only once its reply is complete.
        self.awaiting_reply = False

    def deliver(self, records: Iterable[Record]) -> list[Envelope]:
        """Map records and write their envelopes together with their dedupe keys."""
        envelopes: list[Envelope] = []
        keys: list[str] = []
        feed, now = self.mapper.feed, self._clock()
        for record in records:
            self.stats.records += 1
            made = feed(record, now)
            envelopes += made
            self._follow_prompt(record, made)
            key = record_key(record)
            if key is not None:
                keys.append(key)
        if envelopes or keys:
            self._write(envelopes, keys)
        return envelopes

    def _follow_prompt(self, record: Record, made: list[Envelope]) -> None:
        for env in made:
            # User envelopes are prompts; any agent envelope means a turn is open (the mapper ends it).
            self.awaiting_reply = env.role == "user"
        if not made and not record.is_sidechain and _ends_prompt_silently(record):
            self.awaiting_reply = False

    def close_turn(self, status: TurnStatus) -> list[Envelope]:
        """End what is open (active subagents, then the turn) with `status`.

        A prompt still waiting for its first answer when Claude stopped short (status `failed` or
        `cancelled`) gets a turn of its own, started and ended, so that no prompt is left hanging."""
        now = self._clock()
        envelopes = self.mapper.close_turn(status, now)
        if not envelopes and self.awaiting_reply and status != "completed" and not self.mapper.turn_open:
            turn = self._make.new_id()
            envelopes = [
                self._make.agent(TurnStartEv(), turn=turn, time=now),
                self._make.agent(TurnEndEv(status=status), turn=turn, time=now),
            ]
        self.awaiting_reply = False
        if envelopes:
            self.stats.turns_closed[status] = self.stats.turns_closed.get(status, 0) + 1
            self._write(envelopes, [])
        return envelopes

    def _write(self, envelopes: list[Envelope], keys: list[str]) -> None:
        self.stats.envelopes += len(envelopes)
        self._sink.write(envelopes, keys)


def _ends_prompt_silently(record: Record) -> bool:
    """Records that answer a prompt without any envelope: an interrupt before the first output, or
    the end of a turn that had none."""
    if record.kind == "system":
        return record.data.get("subtype") == "turn_duration"
    return record.kind == "user" and text_of(record.content).strip() in INTERRUPT_TEXTS
