"""Inbound messages (design §5, issue 9): a client's message reaches Claude exactly once.

- `accept` stores it, with the uuid its prompt will be sent under, before it is acknowledged;
  a repeated client message id is acknowledged again with the first one's seq.
- `InboundLedger` knows the prompt uuids still waiting to be taken. The mirror tells it each
  record key it processes (and each prompt Claude has taken); the commit point takes its marks
  into the same store transaction as the batch's envelopes, so a message is marked delivered
  iff its user text is committed, and only once its record is on Claude's transcript.
- `pending_prompts` gives what is still to deliver, in order, after a restart.
- Taken is not answered: a message whose prompt Claude wrote down and then died with happy
  before replying (the conversation ends on it) is delivered again at the restart
  (`redeliver_unanswered`), under a new uuid, its user text not shown twice.
- An injected message (typed into the live TUI, `local/injector.py`) is sent under a uuid the
  TUI picks, so the ledger also knows it by its text: the first user prompt record with exactly
  that text, once the injection is armed, is its delivery.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import get_args

import orjson

from happy_launcher.claude.records import Record, text_of
from happy_launcher.session.continuity import LeafPrompt
from happy_launcher.session.ports import NO_META, Accepted, InputMode, MessageMeta, PermissionMode
from happy_launcher.store.resume import Delivered, InboundMessage
from happy_launcher.store.sessions import SessionStore

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InboundPrompt:
    """A stored inbound message: sent to Claude as `text` under prompt uuid `uuid` (or typed
    into the TUI, with `inject`), after its `meta` is applied."""

    seq: int
    message_id: str
    text: str
    uuid: str
    inject: bool = False
    again: bool = False  # taken once, never answered: its user text was already shown
    meta: MessageMeta = NO_META


def accept(
    store: SessionStore,
    happy_session_id: str,
    message_id: str,
    text: str,
    now: int,
    prompt_uuid: str,
    mode: InputMode = "switch",
    meta: MessageMeta = NO_META,
) -> Accepted:
    """Store a client's message for Claude, to be sent under `prompt_uuid` (idempotent on
    `message_id`: a repeat keeps the first one's text, uuid, mode and meta)."""
    body = _body(text, prompt_uuid, inject=mode == "inject", meta=meta)
    seq, created = store.append_inbound(happy_session_id, message_id, now, body)
    return Accepted(message_seq=seq, duplicate=not created)


def pending_prompts(store: SessionStore, happy_session_id: str) -> list[InboundPrompt]:
    """The messages not yet taken by Claude, oldest first. A body this happy cannot read (a
    newer happy's, or damaged) is logged and left pending: never guessed at, never lost."""
    prompts = []
    for message in store.pending_inbound(happy_session_id):
        prompt = _read(message)
        if prompt is None:
            _log.error("inbound message %s cannot be read: left undelivered", message.id)
            continue
        prompts.append(prompt)
    return prompts


def redeliver_unanswered(
    store: SessionStore, happy_session_id: str, leaf: LeafPrompt, prompt_uuid: str
) -> bool:
    """If the prompt a conversation ends on, unanswered, is a message of ours (Claude took it
    and stopped before replying: happy and Claude were killed in between), that message is
    pending again, to be sent under `prompt_uuid`, marked `again`: its user text is shown by
    the old record. Messages are sent in order: it can only be the last one taken or the
    first one still pending (whose record a restart's tail would mark taken). True if it was."""
    last = store.last_delivered_inbound(happy_session_id)
    pending = store.pending_inbound(happy_session_id)[:1]
    for message in ([] if last is None else [last]) + pending:
        taken = _read(message)
        if taken is not None and _is_it(leaf, taken):
            body = _body(taken.text, prompt_uuid, inject=taken.inject, meta=taken.meta, again=True)
            store.redeliver_inbound(happy_session_id, taken.seq, body)
            return True
    return False


def _is_it(leaf: LeafPrompt, taken: InboundPrompt) -> bool:
    """Sent under its uuid, or typed into the TUI (whose record has a uuid of the TUI's own)."""
    return leaf.uuid == taken.uuid or (taken.inject and prompt_key(leaf.text) == prompt_key(taken.text))


def _body(text: str, prompt_uuid: str, *, inject: bool, meta: MessageMeta, again: bool = False) -> bytes:
    """A stored message's body: its keys only when set (a body without them reads as unset)."""
    fields: dict[str, object] = {"text": text, "uuid": prompt_uuid}
    if again:
        fields["again"] = True
    if inject:
        fields["inject"] = True
    if meta.permission_mode is not None:
        fields["permission_mode"] = meta.permission_mode
    if meta.model is not None:
        fields["model"] = meta.model
    return orjson.dumps(fields)


def _read(message: InboundMessage) -> InboundPrompt | None:
    try:
        body = orjson.loads(message.body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict):
        return None
    text, prompt_uuid = body.get("text"), body.get("uuid")
    if not isinstance(text, str) or not isinstance(prompt_uuid, str):
        return None
    mode, model = body.get("permission_mode"), body.get("model")
    if mode not in (None, *get_args(PermissionMode)) or not isinstance(model, str | None):
        return None
    inject, again = body.get("inject") is True, body.get("again") is True
    meta = MessageMeta(mode, model)
    return InboundPrompt(message.seq, message.id, text, prompt_uuid, inject, again=again, meta=meta)


class InboundLedger:
    """Prompt uuids waiting to be taken by Claude (uuid -> inbound seq), and the deliveries
    seen since the last commit. Sans-IO: the mirror feeds it, the commit point drains it.
    A message delivered `again` (see `redeliver_unanswered`) had its user text shown the first
    time: the mirror is told, so that it is not shown twice."""

    def __init__(self) -> None:
        self._expected: dict[str, int] = {}
        self._texts: dict[str, int] = {}  # injected prompts, by their text (see the module doc)
        self._again: set[int] = set()
        self._taken: list[Delivered] = []

    def expect(self, prompt_uuid: str, seq: int, *, again: bool = False) -> None:
        self._expected[prompt_uuid] = seq
        if again:
            self._again.add(seq)

    def expect_text(self, text: str, seq: int) -> None:
        """The message `seq` is being typed into the TUI: the next user prompt record with this
        text is it. Armed only while the user's keystrokes are held, so the user cannot be
        typing the same text at the same time."""
        self._texts[prompt_key(text)] = seq

    def forget_text(self, seq: int) -> None:
        """The injection of `seq` was not confirmed: a later prompt with its text is not it."""
        self._texts = {text: s for text, s in self._texts.items() if s != seq}

    @property
    def waiting(self) -> bool:
        """Some prompt is expected (a cheap check before looking at each record)."""
        return bool(self._expected) or bool(self._texts)

    def again(self, prompt_uuid: str) -> bool:
        """The prompt with this uuid delivers a message again (its user text was shown)."""
        return self._expected.get(prompt_uuid) in self._again

    def taken(self, key: str, now: int) -> bool:
        """Claude took the prompt with this uuid (its record is on disk), if it is one of ours.
        True if it delivers a message again."""
        seq = self._expected.pop(key, None)
        return seq is not None and self._deliver(seq, now)

    def seen(self, record: Record, key: str, now: int, *, fresh: bool) -> bool:
        """A record with this key was read: ours by its uuid, or an armed injection's prompt
        (only a `fresh` record, not one mapped before: a restart reads the old ones again).
        True if it delivers a message again."""
        if key in self._expected:
            return self.taken(key, now)
        if fresh and self._texts and record.kind == "user" and not record.is_sidechain:
            seq = self._texts.pop(prompt_key(text_of(record.content)), None)
            if seq is not None:
                return self._deliver(seq, now)
        return False

    def _deliver(self, seq: int, now: int) -> bool:
        self._expected = {key: s for key, s in self._expected.items() if s != seq}
        self.forget_text(seq)
        self._taken.append(Delivered(seq, now))
        if seq in self._again:
            self._again.discard(seq)
            return True
        return False

    @property
    def ready(self) -> bool:
        """Deliveries wait to be committed."""
        return bool(self._taken)

    def drain(self) -> tuple[Delivered, ...]:
        """The deliveries to commit with the current batch."""
        taken, self._taken = tuple(self._taken), []
        return taken


def prompt_key(text: str) -> str:
    """How an injected prompt is compared with what Claude recorded: Claude keeps a typed
    prompt as typed, but not the whitespace around it."""
    return text.strip()
