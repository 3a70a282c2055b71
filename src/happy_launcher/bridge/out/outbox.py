"""One session's envelopes to its Happy session, in seq order, nothing lost, nothing twice.

A feed (the session's control socket while it runs, `control/follow.py`; the store once it has
ended) puts envelopes on a bounded stream; the poster takes whatever has arrived, up to a batch,
posts it (each message's localId is the envelope's id, so a batch posted again after a crash or a
lost answer is deduplicated by the server), and advances the store's mark only once the server
has acknowledged every message of the batch. While a post is in flight, what arrives waits for
the next batch."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from happy_launcher.bridge.link.api import MAX_BATCH, HappyApi
from happy_launcher.bridge.link.retry import LOG, Retry
from happy_launcher.bridge.out.links import Linked
from happy_launcher.control.client import EnvelopeBytes
from happy_launcher.control.follow import follow
from happy_launcher.control.views import SessionView
from happy_launcher.errors import ControlError, HappyServerError
from happy_launcher.store.sessions import SessionStore

STORE_PAGE = MAX_BATCH  # envelopes read from the store at a time
MAX_WAITING = 1000  # chunks between the feed and the poster: a feed waits past this
Stored = tuple[int, bytes]  # (seq, the envelope's JSON as the store holds it)
Chunk = list[Stored]  # what a feed has at once: a page of the store, or one live envelope


@dataclass(frozen=True, slots=True)
class Poster:
    store: SessionStore
    server: str
    api: HappyApi
    retry: Retry

    async def run(self, linked: Linked, sent_seq: int, receive: MemoryObjectReceiveStream[Chunk]) -> None:
        """Post what `receive` yields after `sent_seq`, until it is closed and all is posted."""
        waiting: list[Stored] = []
        async with receive:
            while True:
                if not waiting:
                    try:
                        waiting.extend(await receive.receive())
                    except anyio.EndOfStream:
                        return
                while len(waiting) < MAX_BATCH:  # whatever else has arrived meanwhile
                    try:
                        waiting.extend(receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                batch = [(seq, body) for seq, body in waiting[:MAX_BATCH] if seq > sent_seq]
                del waiting[:MAX_BATCH]
                if batch:
                    await self._post(linked, batch)
                    sent_seq = batch[-1][0]

    async def _post(self, linked: Linked, batch: Sequence[Stored]) -> None:
        messages = [_message(linked, body) for _, body in batch]
        wanted = {local_id for local_id, _ in messages}

        async def post() -> None:
            acked = {posted.localId for posted in await self.api.post_messages(linked.happy_id, messages)}
            if acked != wanted:  # not an acknowledgement of this batch: post it again
                raise HappyServerError(f"Happy's server at {self.server} acknowledged other messages")

        await self.retry.call(post)
        await anyio.to_thread.run_sync(self.store.advance_sent, linked.session, self.server, batch[-1][0])


def _message(linked: Linked, body: bytes) -> tuple[str, str]:
    """(localId, sealed content): the envelope wrapped as Happy's session-protocol message."""
    envelope = orjson.loads(body)
    sealed = linked.cipher.seal({"role": "session", "content": envelope, "meta": {"sentFrom": "cli"}})
    return str(envelope["id"]), sealed


async def feed_stored(
    store: SessionStore, session: str, after_seq: int, send: MemoryObjectSendStream[Chunk]
) -> None:
    """The session's envelopes after `after_seq` from the store (an ended session's)."""
    async with send:
        while True:
            rows = await anyio.to_thread.run_sync(store.raw_envelopes, session, after_seq, STORE_PAGE)
            if rows:
                await send.send(rows)
            if len(rows) < STORE_PAGE:
                return
            after_seq = rows[-1][0]


async def feed_live(
    home: Path, view: SessionView, after_seq: int, send: MemoryObjectSendStream[Chunk], retry: Retry
) -> None:
    """The session's envelopes after `after_seq` through its control socket while it runs, then
    from the store once it has ended; a broken connection is followed again from the last seq."""
    last = after_seq
    async with send:
        failures = 0
        while True:
            try:
                async with aclosing(follow(home, view, last)) as followed:
                    async for item in followed:
                        if isinstance(item, EnvelopeBytes):
                            await send.send([(item.seq, item.body)])
                            last = item.seq
            except ControlError as exc:
                failures += 1
                LOG.warning("session %s: %s; following it again", view.happy_id, exc)
                await retry.sleeper.sleep(retry.backoff.delay(failures))
            else:
                return


def envelope_stream() -> tuple[MemoryObjectSendStream[Chunk], MemoryObjectReceiveStream[Chunk]]:
    return anyio.create_memory_object_stream[Chunk](MAX_WAITING)
