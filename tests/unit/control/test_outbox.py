"""The outbox over a fake socket: a line put while idle goes out at once (no writer wake-up),
whatever the socket cannot take now is the writer's, and the order holds either way."""

from __future__ import annotations

import anyio
import pytest

from happy_launcher.control.outbox import Outbox
from tests.support.control import FakeSocket

pytestmark = pytest.mark.anyio


async def until_idle(outbox: Outbox) -> None:
    """Let the writer run until it waits for lines again."""
    for _ in range(100):
        await anyio.lowlevel.checkpoint()
        if outbox.size == 0:
            return


async def test_a_line_put_while_idle_is_sent_at_once_without_the_writer() -> None:
    outbox, sock = Outbox(), FakeSocket()
    async with anyio.create_task_group() as tg:
        tg.start_soon(outbox.run, sock)
        await anyio.lowlevel.checkpoint()  # the writer waits for lines
        outbox.put(b"one\n")
        outbox.put(b"two\n")
        assert sock.now == [b"one\n", b"two\n"] and sock.later == []
        outbox.close()
    assert sock.received == b"one\ntwo\n"


async def test_what_the_socket_cannot_take_now_goes_by_the_writer_in_order() -> None:
    outbox, sock = Outbox(), FakeSocket(room=2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(outbox.run, sock)
        await anyio.lowlevel.checkpoint()
        outbox.put(b"first\n")  # 2 bytes now, the rest queued
        outbox.put(b"second\n")  # something is queued: behind it, not sent now
        assert sock.now == [b"fi"]
        assert outbox.size == len(b"rst\nsecond\n")
        await until_idle(outbox)
        outbox.close()
    assert sock.received == b"first\nsecond\n"


async def test_nothing_is_sent_now_while_the_writer_is_sending() -> None:
    outbox, sock = Outbox(), FakeSocket(room=0)
    sock.release = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(outbox.run, sock)
        await anyio.lowlevel.checkpoint()
        outbox.put(b"a\n")  # the socket takes nothing now: the writer's
        with anyio.fail_after(5):
            await sock.sending.wait()
        sock.room = None  # room again, but the writer's batch is still on its way
        outbox.put(b"b\n")
        assert sock.now == []
        sock.release.set()
        await until_idle(outbox)
        outbox.close()
    assert sock.received == b"a\nb\n"


async def test_a_dropped_client_gets_nothing_more_sent_now() -> None:
    outbox, sock = Outbox(limit=10), FakeSocket(room=0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(outbox.run, sock)
        await anyio.lowlevel.checkpoint()
        outbox.put(b"x" * 20)  # over the limit: dropped
        sock.room = None
        outbox.put(b"late\n")
    assert b"late" not in sock.received
    assert b'"dropped"' in sock.received


async def test_a_line_the_socket_took_part_of_is_ended_before_the_dropped_line() -> None:
    """A batch of lines over what the socket and the outbox take: the client is dropped, but
    first gets the end of the line it has half of, so that it reads the `dropped` line whole
    (glued to half an envelope it was missed, and the follower took the close for the end)."""
    outbox, sock = Outbox(limit=10), FakeSocket(room=7)
    async with anyio.create_task_group() as tg:
        tg.start_soon(outbox.run, sock)
        await anyio.lowlevel.checkpoint()
        outbox.put(b"one\ntwo-long\nthree-long\n")  # "one\ntwo" now; the rest overflows
        assert outbox.dropped is not None
    lines = sock.received.split(b"\n")
    assert lines[:2] == [b"one", b"two-long"]
    assert b'"dropped"' in lines[2] and lines[3:] == [b""]
