"""A `Controller` kept in memory, beside the real one: the control server's tests, its
benchmark, and anyone testing a client against a real server use it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import anyio

from happy_launcher.protocol import Envelope
from happy_launcher.session.ports import (
    NO_META,
    AbortOutcome,
    Accepted,
    CommitSubscriber,
    ControlRefused,
    InputMode,
    MessageMeta,
    Mode,
    PermissionAnswer,
    PermissionListener,
    PermissionRequest,
    SessionFacts,
    SwitchOutcome,
)


class FakeController:
    """Commits are `commit(...)` calls; everything a client asked is recorded for the test."""

    def __init__(self, facts: SessionFacts) -> None:
        self._facts = facts
        self.stored: list[tuple[int, bytes]] = []
        self.sent: dict[str, tuple[Accepted, str]] = {}  # by message id
        self.modes: dict[str, InputMode | None] = {}  # each sent message's mode, by message id
        self.metas: dict[str, MessageMeta] = {}  # each sent message's meta, by message id
        self.aborts = 0
        self.answers: list[tuple[str, bool, str | None]] = []
        self.refuse_switch: str | None = None  # a ControlRefused message for the next switches
        self.before_history: Callable[[], None] | None = None  # runs inside each `history` call
        self._subscribers: list[CommitSubscriber] = []
        self._watchers: list[PermissionListener] = []
        self._pending: dict[str, PermissionRequest] = {}
        # `ask_permission` waiting, and the settlement it gets
        self._asks: dict[str, tuple[anyio.Event, list[PermissionAnswer | None]]] = {}
        self.asked = 0

    # --- what the session does ----------------------------------------------------------------

    def commit(self, envelopes: Sequence[Envelope]) -> list[int]:
        """Store, then tell the subscribers (as the session's commit point does)."""
        first = len(self.stored) + 1
        seqs = list(range(first, first + len(envelopes)))
        self.stored.extend((seq, env.to_json()) for seq, env in zip(seqs, envelopes, strict=True))
        for subscriber in list(self._subscribers):
            subscriber.committed(seqs, envelopes)
        return seqs

    def request_permission(self, request: PermissionRequest) -> None:
        self._pending[request.id] = request
        for watcher in list(self._watchers):
            watcher.requested(request)

    def settle(self, request_id: str, answer: PermissionAnswer | None) -> None:
        """`answer` None: withdrawn."""
        del self._pending[request_id]
        for watcher in list(self._watchers):
            watcher.settled(request_id, answer)
        if request_id in self._asks:
            done, settlement = self._asks.pop(request_id)
            settlement.append(answer)
            done.set()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    # --- Controller -----------------------------------------------------------------------------

    def facts(self) -> SessionFacts:
        return self._facts

    def history(self, after_seq: int, limit: int) -> list[tuple[int, bytes]]:
        if self.before_history is not None:
            self.before_history()
        return [row for row in self.stored if row[0] > after_seq][:limit]

    def subscribe(self, subscriber: CommitSubscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    async def send(
        self, message_id: str, text: str, mode: InputMode | None = None, meta: MessageMeta = NO_META
    ) -> Accepted:
        if message_id in self.sent:
            return replace(self.sent[message_id][0], duplicate=True)
        accepted = Accepted(message_seq=len(self.sent) + 1, duplicate=False)
        self.sent[message_id] = (accepted, text)
        self.modes[message_id] = mode
        self.metas[message_id] = meta
        return accepted

    async def switch(self, to: Mode) -> SwitchOutcome:
        if self.refuse_switch is not None:
            raise ControlRefused(self.refuse_switch)
        if self._facts.mode == to:
            return "already-there"
        self._facts = replace(self._facts, mode=to)
        return "switched"

    async def abort(self) -> AbortOutcome:
        """Ends the turn when `facts().busy` (then idle), as the session would."""
        self.aborts += 1
        if not self._facts.busy:
            return "no-turn"
        self._facts = replace(self._facts, busy=False)
        return "aborted"

    def pending_permissions(self) -> list[PermissionRequest]:
        return list(self._pending.values())

    def answer(self, request_id: str, allow: bool, message: str | None) -> None:
        if request_id not in self._pending:
            raise ControlRefused(f"no pending permission request {request_id}: it was answered or withdrawn")
        self.answers.append((request_id, allow, message))
        self.settle(request_id, PermissionAnswer(allow, message or ""))

    def watch_permissions(self, watcher: PermissionListener) -> Callable[[], None]:
        self._watchers.append(watcher)
        for request in list(self._pending.values()):  # the open ones first, as the real one does
            watcher.requested(request)
        return lambda: self._watchers.remove(watcher)

    async def ask_permission(self, tool: str, tool_input: dict[str, Any]) -> PermissionAnswer | None:
        """A pending `local` request with id `ask-<n>`, settled by `answer` or `settle`;
        cancelled (the asker left): withdrawn."""
        self.asked += 1
        request_id = f"ask-{self.asked}"
        done, settlement = self._asks[request_id] = (anyio.Event(), [])
        self.request_permission(PermissionRequest(request_id, tool, tool_input, tool, origin="local"))
        try:
            await done.wait()
        finally:
            if request_id in self._asks:
                self.settle(request_id, None)
        return settlement[0]
