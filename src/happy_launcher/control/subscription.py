"""One client's subscription: the session's committed envelopes from a given seq on, history
first, then live, with no gap and no duplicate at the seam (docs/control-protocol.md).

It subscribes to live commits *before* reading history, holding what comes meanwhile; reads the
history up to its end; then passes on the held envelopes whose seq is beyond the last one read,
and from then on every live one. A commit can land before, during or after the history read:
it is in the history, or held, or both (and then sent once, by seq)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from happy_launcher.control.framing import encode, envelope_line
from happy_launcher.control.outbox import Outbox
from happy_launcher.control.wire import Permission, PermissionRequested, PermissionSettled
from happy_launcher.protocol import Envelope
from happy_launcher.session.ports import Controller, PermissionAnswer, PermissionRequest

HISTORY_CHUNK = 512  # envelopes per history read (the read runs on the event loop)


class Subscription:
    """A `CommitSubscriber` and `PermissionListener` feeding one client's outbox."""

    def __init__(self, controller: Controller, outbox: Outbox, after_seq: int | None) -> None:
        self._controller = controller
        self._outbox = outbox
        self._after = after_seq
        self._live = after_seq is None  # "from now": nothing to catch up on
        self._last = 0
        self._held: list[tuple[int, Envelope]] = []
        self._held_size = 0
        self._stops: list[Callable[[], None]] = []

    def start(self, ready: Callable[[], None] = lambda: None) -> None:
        """Subscribe (synchronously: nothing committed from here on can be missed; a session that
        has ended refuses, and nothing was queued), call `ready` (the reply goes before any event),
        then watch the permissions, which queues the requests already open, once: they are state
        the client needs."""
        self._stops.append(self._controller.subscribe(self))
        ready()
        self._stops.append(self._controller.watch_permissions(self))

    def stop(self) -> None:
        for stop in self._stops:
            stop()
        self._stops.clear()

    async def catch_up(self) -> None:
        """Send the history after `after_seq`, at the client's pace, then go live."""
        if self._after is None:
            return
        last = self._after
        while self._outbox.accepting:
            rows = self._controller.history(last, HISTORY_CHUNK)
            for seq, body in rows:
                await self._outbox.put_paced(envelope_line(seq, body))
                last = seq
            if len(rows) < HISTORY_CHUNK:
                break
        # No await from the last history read to here: whatever was committed after it is held.
        self._last = last
        self._live = True
        held, self._held = self._held, []
        self.committed([seq for seq, _ in held], [env for _, env in held])

    # --- CommitSubscriber ---------------------------------------------------------------------

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        if not self._live:
            self._hold(seqs, envelopes)
            return
        lines = [
            envelope_line(seq, e.to_json())
            for seq, e in zip(seqs, envelopes, strict=True)
            if seq > self._last
        ]
        if lines:  # one send for the batch: each costs a system call and a wake-up of the client
            self._outbox.put(b"".join(lines))
            self._last = seqs[-1]

    def _hold(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        for seq, envelope in zip(seqs, envelopes, strict=True):
            self._held.append((seq, envelope))
            self._held_size += len(envelope.to_json())
        if self._held_size > self._outbox.limit:
            self._held.clear()
            self._outbox.drop("the session moved on faster than this client read its history")

    # --- PermissionListener -------------------------------------------------------------------

    def requested(self, request: PermissionRequest) -> None:
        self._outbox.put(encode(PermissionRequested(request=Permission.of(request))))

    def settled(self, request_id: str, answer: PermissionAnswer | None) -> None:
        self._outbox.put(encode(PermissionSettled.of(request_id, answer)))
