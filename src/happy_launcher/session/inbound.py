"""Inbound messages (design §5, issue 9): a client's message reaches Claude exactly once.

- `accept` stores it, with the uuid its prompt will be sent under, before it is acknowledged;
  a repeated client message id is acknowledged again with the first one's seq.
- `InboundLedger` knows the prompt uuids still waiting to be taken. The mirror tells it each
  record key it processes (and each prompt Claude has taken); the commit point takes its marks
  into the same store transaction as the batch's envelopes, so a message is marked delivered
  iff its user text is committed, and only once its record is on Claude's transcript.
- `pending_prompts` gives what is still to deliver, in order, after a restart.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import orjson

from happy_launcher.session.control_types import Accepted
from happy_launcher.session.store import Delivered, SessionStore

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InboundPrompt:
    """A stored inbound message: sent to Claude as `text` under prompt uuid `uuid`."""

    seq: int
    message_id: str
    text: str
    uuid: str


def accept(
    store: SessionStore, happy_session_id: str, message_id: str, text: str, now: int, prompt_uuid: str
) -> Accepted:
    """Store a client's message for Claude, to be sent under `prompt_uuid` (idempotent on
    `message_id`: a repeat keeps the first one's text and uuid)."""
    body = orjson.dumps({"text": text, "uuid": prompt_uuid})
    seq, created = store.append_inbound(happy_session_id, message_id, now, body)
    return Accepted(message_seq=seq, duplicate=not created)


def pending_prompts(store: SessionStore, happy_session_id: str) -> list[InboundPrompt]:
    """The messages not yet taken by Claude, oldest first. A body this happy cannot read (a
    newer happy's, or damaged) is logged and left pending: never guessed at, never lost."""
    prompts = []
    for message in store.pending_inbound(happy_session_id):
        try:
            body = orjson.loads(message.body)
        except orjson.JSONDecodeError:
            body = None
        text = body.get("text") if isinstance(body, dict) else None
        prompt_uuid = body.get("uuid") if isinstance(body, dict) else None
        if not isinstance(text, str) or not isinstance(prompt_uuid, str):
            _log.error("inbound message %s cannot be read: left undelivered", message.id)
            continue
        prompts.append(InboundPrompt(message.seq, message.id, text, prompt_uuid))
    return prompts


class InboundLedger:
    """Prompt uuids waiting to be taken by Claude (uuid -> inbound seq), and the deliveries
    seen since the last commit. Sans-IO: the mirror feeds it, the commit point drains it."""

    def __init__(self) -> None:
        self._expected: dict[str, int] = {}
        self._taken: list[Delivered] = []

    def expect(self, prompt_uuid: str, seq: int) -> None:
        self._expected[prompt_uuid] = seq

    @property
    def waiting(self) -> bool:
        """Some prompt is expected (a cheap check before looking at each record)."""
        return bool(self._expected)

    def taken(self, key: str, now: int) -> None:
        """Claude took the prompt with this uuid (its record is on disk), if it is one of ours."""
        seq = self._expected.pop(key, None)
        if seq is not None:
            self._taken.append(Delivered(seq, now))

    @property
    def ready(self) -> bool:
        """Deliveries wait to be committed."""
        return bool(self._taken)

    def drain(self) -> tuple[Delivered, ...]:
        """The deliveries to commit with the current batch."""
        taken, self._taken = tuple(self._taken), []
        return taken
