"""The ordered queue between remote mode's SDK reader and the session (design §4).

Strictly FIFO: items are applied in the order they were put, never dropped, reordered or held
back. `put` never blocks (the buffer is unbounded): the SDK reader never waits for the consumer.
Behind the consumer, the session's commit point disables a failing best-effort output and keeps
a failing store's batches in order (all on this event loop: a write that blocks the thread
blocks the reader too).
The items waiting together are applied as one batch (one store commit), in order; a prompt
that must wait until Claude has taken it splits the batch, and holds back what is behind it. Partial text
and session ids may go through too, to `on_notice`, or straight to a screen: they are not stored.

Abort (design §4): `abort` puts the synthetic interrupted results of the calls still running
and then the close, so both go through after everything already queued; `close` then lets the
consumer finish what is left and return, and `flushed` waits until the consumer has caught up.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Literal, Protocol

import anyio

from happy_launcher.claude.records import Record
from happy_launcher.claude.sdk_items import Item, Partial, SessionStarted, TurnResult
from happy_launcher.protocol import TurnStatus

MAX_BATCH = 256  # items taken at once: bounds one store transaction


# How a prompt's wait ended: Claude wrote its record ("taken"); it did not within the bound,
# so the turn goes on and the record counts when it comes ("late"); the prompt never reached
# Claude, or the session stops first: nothing is applied, the transcript tells later ("skip").
Taken = Literal["taken", "late", "skip"]


@dataclass(frozen=True, slots=True)
class PromptSent:
    """Remote mode sent Claude this prompt (the SDK does not echo it); `uuid`: the one it was
    sent with, which Claude gives its transcript record. `taken`: awaited by the consumer
    before the prompt is applied, holding back everything queued behind it (the turn's items),
    so that the prompt is committed only once Claude has taken it."""

    text: str
    uuid: str | None = None
    taken: Callable[[], Awaitable[Taken]] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Close:
    """End the session's activity with `status`: its subagents, then its turn (abort, exit)."""

    status: TurnStatus


QueueItem = Item | PromptSent | Close
Notice = Partial | SessionStarted


class QueueTarget(Protocol):
    """What the queue applies items to: the session's mirror. `batch`: the items taken at
    once are applied inside it (the mirror commits them in one store transaction)."""

    def batch(self) -> AbstractContextManager[object]: ...

    def deliver(self, records: Sequence[Record]) -> object: ...

    def prompt_sent(self, text: str, uuid: str | None = None, *, taken: bool = True) -> object: ...

    def end_turn(
        self, status: TurnStatus, service: str | None = None, *, taken: tuple[str, ...] | None = None
    ) -> object: ...

    def close_turn(self, status: TurnStatus) -> object: ...


class OrderedQueue:
    """One producer (`put`, `abort`, `close`), one consumer (`run`), on one event loop."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[QueueItem](math.inf)
        self._put = 0
        self._done = 0
        self._caught_up = anyio.Event()
        self._caught_up.set()

    @property
    def pending(self) -> int:
        """Items put and not applied yet."""
        return self._put - self._done

    def put(self, item: QueueItem) -> None:
        """Queue one item; never blocks. After `close`, anyio.ClosedResourceError (a bug)."""
        self._send.send_nowait(item)
        self._put += 1
        if self._caught_up.is_set():
            self._caught_up = anyio.Event()

    def put_all(self, items: Iterable[QueueItem]) -> None:
        for item in items:
            self.put(item)

    def abort(self, interrupted: Iterable[QueueItem], status: TurnStatus = "cancelled") -> None:
        """The session stops mid-turn: what `Converter.interrupted()` gives (the record it held,
        interrupted results of the calls still running), then the close, after everything
        queued before."""
        self.put_all(interrupted)
        self.put(Close(status))

    def close(self) -> None:
        """No more items: `run` applies what is queued and returns."""
        self._send.close()

    async def flushed(self) -> None:
        """Wait until every item put so far has been applied."""
        await self._caught_up.wait()

    async def run(self, target: QueueTarget, on_notice: Callable[[Notice], object] | None = None) -> None:
        """Apply items in order until `close`; `on_notice` sees partial text and session ids."""
        async with self._receive:
            async for first in self._receive:
                items = [first]
                while len(items) < MAX_BATCH:
                    try:
                        items.append(self._receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                for part in _parts(items):
                    if isinstance(part, PromptSent):
                        assert part.taken is not None
                        if (taken := await part.taken()) != "skip":
                            with target.batch():
                                target.prompt_sent(part.text, part.uuid, taken=taken == "taken")
                        continue
                    with target.batch():
                        _apply(part, target, on_notice)
                self._done += len(items)
                if self._done == self._put:
                    self._caught_up.set()


def _parts(items: list[QueueItem]) -> Iterator[list[QueueItem] | PromptSent]:
    """The items, with each prompt that must be waited for on its own, in order."""
    part: list[QueueItem] = []
    for item in items:
        if isinstance(item, PromptSent) and item.taken is not None:
            if part:
                yield part
                part = []
            yield item
        else:
            part.append(item)
    if part:
        yield part


def _apply(items: list[QueueItem], target: QueueTarget, on_notice: Callable[[Notice], object] | None) -> None:
    batch: list[Record] = []
    for item in items:
        if isinstance(item, Record):
            batch.append(item)
            continue
        if batch:
            target.deliver(batch)
            batch = []
        if isinstance(item, PromptSent):
            target.prompt_sent(item.text, item.uuid)
        elif isinstance(item, TurnResult):
            target.end_turn(item.status, item.service, taken=item.taken)
        elif isinstance(item, Close):
            target.close_turn(item.status)
        elif on_notice is not None:
            on_notice(item)
    if batch:
        target.deliver(batch)
