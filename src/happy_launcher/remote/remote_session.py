"""A session driven in remote mode: what the Python API hands to scripts and what the remote
screen drives. Envelopes come out as the protocol's `Envelope` models, read back from the
session's commit point (so they are exactly what the store holds, in seq order)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from happy_launcher.protocol import Envelope
from happy_launcher.remote.driver import RemoteDriver, SentPrompt
from happy_launcher.session.inbound import InboundPrompt
from happy_launcher.session.permissions import PermissionBroker
from happy_launcher.session.ports import NO_META, CommitSubscriber, MessageMeta, PermissionAnswer


class Committed(Protocol):
    """What a remote session needs of the happy session (`session/core.Session`)."""

    id: str | None

    def subscribe(self, subscriber: CommitSubscriber) -> Callable[[], None]: ...

    def pending_prompts(self) -> list[InboundPrompt]: ...

    def has_pending(self) -> bool: ...


class _Feed:
    """A session subscriber that queues committed envelopes for one reader (never blocks)."""

    def __init__(self, send: MemoryObjectSendStream[Envelope]) -> None:
        self._send = send

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        for envelope in envelopes:
            self._send.send_nowait(envelope)


class RemoteSession:
    """One Claude session driven through the Agent SDK, mirrored as a happy session."""

    def __init__(self, session: Committed, driver: RemoteDriver, permissions: PermissionBroker) -> None:
        self._session = session
        self._driver = driver
        self.permissions = permissions
        self._delivering = anyio.Lock()
        self._sending = anyio.Lock()

    @property
    def happy_session_id(self) -> str:
        assert self._session.id is not None
        return self._session.id

    @property
    def claude_session_id(self) -> str:
        return self._driver.claude_session_id

    @property
    def busy(self) -> bool:
        return self._driver.busy

    async def send(self, text: str, prompt_uuid: str | None = None) -> AsyncIterator[Envelope]:
        """Send a prompt and yield the envelopes of the turn it starts, from the prompt's user
        text to its `turn-end` (completed, failed or cancelled)."""
        async with self.committed() as envelopes:
            sent = await self.submit(text, prompt_uuid)
            async for envelope in envelopes:
                if envelope.turn == sent.turn or (
                    envelope.role == "user" and envelope.claudeUuid == sent.uuid
                ):
                    yield envelope
                    if envelope.ev.t == "turn-end":
                        return

    @property
    def model(self) -> str | None:
        """Claude's model now, when known (the run's --model, or the last message's)."""
        return self._driver.model

    async def submit(
        self, text: str, prompt_uuid: str | None = None, meta: MessageMeta = NO_META
    ) -> SentPrompt:
        """Send a prompt (under `prompt_uuid`, default a new one; `meta` applied first) once the
        running turn (if any) has ended; its envelopes come to the subscribers. Returns once
        Claude has taken it and its user text and turn-start are committed."""
        async with self._sending:  # one turn at a time, in order, whoever sends (screen, clients)
            while self._driver.busy:
                await self._driver.wait_idle()
            return await self._driver.send(text, prompt_uuid, meta)

    def has_pending(self) -> bool:
        """Some inbound message waits for Claude."""
        return self._session.has_pending()

    async def deliver_pending(self) -> list[SentPrompt]:
        """Send each inbound message Claude has not taken, oldest first, each once the turn
        before it has ended, under its stored prompt uuid. Those Claude took while happy was
        down were marked delivered by the transcript read done on connecting; those sent in
        this connection are not sent again. Returns once the last one's turn has started."""
        sent = []
        async with self._delivering:  # two callers never send one message twice
            for prompt in self._session.pending_prompts():
                if prompt.uuid not in self._driver.sent:
                    sent.append(await self.submit(prompt.text, prompt.uuid, prompt.meta))
        return sent

    def subscribe(self, subscriber: CommitSubscriber) -> Callable[[], None]:
        """Be told of every envelope committed from now on (`committed(seqs, envelopes)`)."""
        return self._session.subscribe(subscriber)

    async def interrupt(self) -> None:
        """End the running turn `cancelled`; no-op when idle."""
        await self._driver.interrupt()

    async def wait_idle(self) -> None:
        await self._driver.wait_idle()

    def answer(self, request_id: str, answer: PermissionAnswer) -> bool:
        """Answer a pending permission request; False if it is unknown or already answered."""
        return self.permissions.answer(request_id, answer)

    @asynccontextmanager
    async def committed(self) -> AsyncIterator[AsyncIterator[Envelope]]:
        """Every envelope committed from now on, in seq order, while the block runs."""
        send, receive = anyio.create_memory_object_stream[Envelope](math.inf)
        unsubscribe: Callable[[], None] = self._session.subscribe(_Feed(send))
        try:
            async with receive:
                yield receive
        finally:
            unsubscribe()
            send.close()
