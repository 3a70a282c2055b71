"""LocalFront's hand-over to remote mode, in-process against a FakePty and a real Session: Esc
while a turn runs, then SIGTERM once Claude's interrupt record closed the turn (or its wait ran
out), SIGTERM at once when idle; killed when SIGTERM does not end it."""

from __future__ import annotations

import signal

import anyio
import anyio.lowlevel
import pytest

from happy_launcher.local.fake_pty import FakePty
from happy_launcher.local.front import ESC, LocalFront, StopWaits
from happy_launcher.local.tui_screen import TuiScreen
from happy_launcher.session.launcher import Run
from tests.support.records import user

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]

BOUND = 2.0  # seconds: far above what any step takes; a hang fails the test instead
NEVER = 60.0  # a wait that must not run out in the test


def open_turn(ref: Run) -> None:
    ref.get().deliver([user("count to a million", uuid="u-1")])
    assert ref.get().mirror.turn is not None


def sigterm_exits(pty: FakePty) -> FakePty:
    pty.on_signal = lambda sig: pty.exit() if sig == signal.SIGTERM else None
    return pty


async def switch(front: LocalFront, pty: FakePty) -> None:
    """Serve until the switch has stopped Claude."""
    with anyio.fail_after(BOUND):
        front.request_switch()
        await front.serve(pty)


async def test_a_busy_tui_gets_esc_and_sigterm_only_after_the_interrupt_record(ref: Run) -> None:
    open_turn(ref)
    front = LocalFront(ref, TuiScreen(), waits=StopWaits(interrupt=NEVER, term=NEVER))
    pty = sigterm_exits(FakePty())
    async with anyio.create_task_group() as tg:
        tg.start_soon(switch, front, pty)
        with anyio.fail_after(BOUND):
            await pty.until(lambda: pty.writes == [ESC])
        for _ in range(5):  # the front has had its turns: still no SIGTERM before the record
            await anyio.lowlevel.checkpoint()
        assert pty.signals == [] and not front.switched
        ref.get().deliver([user("[Request interrupted by user]", uuid="u-2", parent="u-1")])
        with anyio.fail_after(BOUND):
            await pty.until(lambda: pty.exited)
    assert pty.signals == [signal.SIGTERM] and front.switched and not pty.stopped
    assert ref.get().mirror.turn is None


async def test_an_idle_tui_gets_sigterm_at_once(ref: Run) -> None:
    front = LocalFront(ref, TuiScreen(), waits=StopWaits(interrupt=NEVER, term=NEVER))
    pty = sigterm_exits(FakePty())
    await switch(front, pty)
    assert pty.writes == [] and pty.signals == [signal.SIGTERM]
    assert front.switched and not pty.stopped


async def test_without_the_interrupt_record_sigterm_comes_after_the_wait(
    ref: Run, caplog: pytest.LogCaptureFixture
) -> None:
    open_turn(ref)
    front = LocalFront(ref, TuiScreen(), waits=StopWaits(interrupt=0.01, term=NEVER))
    pty = sigterm_exits(FakePty())
    await switch(front, pty)
    assert pty.writes == [ESC] and pty.signals == [signal.SIGTERM] and front.switched
    assert ref.get().mirror.turn is not None  # the launcher closes it `cancelled`
    assert "did not end the interrupted turn" in caplog.text


async def test_a_tui_that_ignores_sigterm_is_stopped(ref: Run) -> None:
    front = LocalFront(ref, TuiScreen(), waits=StopWaits(interrupt=NEVER, term=0.01))
    pty = FakePty()
    await switch(front, pty)
    assert pty.signals == [signal.SIGTERM] and pty.stopped and front.switched


async def test_abort_is_esc_only_while_a_turn_runs(ref: Run) -> None:
    front = LocalFront(ref, TuiScreen())
    pty = FakePty()
    async with anyio.create_task_group() as tg:
        tg.start_soon(front.serve, pty)
        await anyio.lowlevel.checkpoint()  # serve() has taken the PTY
        await front.abort()
        open_turn(ref)
        await front.abort()
        tg.cancel_scope.cancel()
    assert pty.writes == [ESC]
