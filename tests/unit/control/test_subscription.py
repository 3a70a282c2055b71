"""A live subscription hands each commit to its client's outbox."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from happy_launcher.control.fake import FakeController
from happy_launcher.control.framing import envelope_line
from happy_launcher.control.outbox import Outbox
from happy_launcher.control.subscription import Subscription
from tests.support.control import Envelopes, FakeSocket, facts

pytestmark = pytest.mark.anyio


async def test_a_commit_of_several_envelopes_goes_to_the_client_in_one_send() -> None:
    """Each send is a system call and a wake-up of the client, for every client of the session."""
    controller, envelopes, socket, outbox = FakeController(facts()), Envelopes(), FakeSocket(), Outbox()
    subscription = Subscription(controller, outbox, after_seq=None)
    subscription.start()
    first, second = envelopes.make(3), envelopes.make(1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(outbox.run, socket)
        await anyio.lowlevel.checkpoint()  # the writer waits: a line put goes out at once
        controller.commit(first)
        controller.commit(second)
        outbox.close()
    subscription.stop()
    lines = [envelope_line(seq, e.to_json()) for seq, e in enumerate([*first, *second], start=1)]
    assert socket.now == [b"".join(lines[:3]), lines[3]] and socket.later == []  # one send each
