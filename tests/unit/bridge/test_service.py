"""serve's token check over a scripted server and a sleeper that returns at once: offline and
retried with a doubling backoff capped at 30 s, connected once accepted, and a refused token
reported once as unauthorized and never asked again; the run stops when serve returns or on SIGTERM."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Literal

import anyio
import pytest

from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.process.daemon_run import serve_until_signalled
from happy_launcher.bridge.process.report import Report
from happy_launcher.bridge.process.service import REFUSED, BridgeContext, check_token
from happy_launcher.errors import HappyServerError

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]

Answer = Literal["accepted", "refused"] | HappyServerError
DOWN = HappyServerError("cannot reach http://s (ConnectError)")


class ScriptedAccount:
    def __init__(self, answers: list[Answer]) -> None:
        self.answers, self.tokens = answers, list[str]()

    async def check(self, token: str) -> Literal["accepted", "refused"]:
        self.tokens.append(token)
        answer = self.answers.pop(0)
        if isinstance(answer, HappyServerError):
            raise answer
        return answer


class Sleeps:
    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture
def states(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The report's log: one line per change of state or error."""
    caplog.set_level(logging.INFO, logger="happy_launcher.bridge.process.report")
    return caplog


def lines(states: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in states.records]


def context(home: Path) -> BridgeContext:
    report = Report(home, pid=1, server="http://s", clock=lambda: 0.0)
    credentials = Credentials(token="tok", variant="legacy", secret=bytes(32))
    return BridgeContext(home, "http://s", credentials, "machine", report)


async def test_offline_is_retried_with_a_capped_backoff_until_connected(
    tmp_path: Path, states: pytest.LogCaptureFixture
) -> None:
    account, sleeps = ScriptedAccount([*[DOWN] * 7, "accepted"]), Sleeps()
    ctx = context(tmp_path)
    assert await check_token(ctx, account, sleeps) is True
    assert sleeps.slept == [1, 2, 4, 8, 16, 30, 30]
    said = [f"offline: cannot reach http://s (ConnectError); retrying in {n} s" for n in (1, 2, 4, 8, 16, 30)]
    assert lines(states) == [*said, "connected"]  # the second 30 s retry is no news
    assert account.tokens == ["tok"] * 8
    assert ctx.report.current.line() == "connected"


async def test_a_refused_token_is_unauthorized_once_and_not_asked_again(
    tmp_path: Path, states: pytest.LogCaptureFixture
) -> None:
    ctx = context(tmp_path)
    account, sleeps = ScriptedAccount([DOWN, "refused"]), Sleeps()
    assert await check_token(ctx, account, sleeps) is False
    assert lines(states)[-1] == f"unauthorized: {REFUSED}"
    assert REFUSED == "the server refused the token: run `happy auth login`"
    assert (sleeps.slept, len(account.tokens)) == ([1], 2)
    assert ctx.report.current.line() == f"unauthorized: {REFUSED}"


async def test_the_run_ends_when_serve_returns(tmp_path: Path) -> None:
    served: list[str] = []

    async def serve(ctx: BridgeContext) -> None:
        served.append(ctx.machine_id)

    with anyio.fail_after(5):
        await serve_until_signalled(serve, context(tmp_path))
    assert served == ["machine"]


async def test_sigterm_cancels_serve(tmp_path: Path) -> None:
    cancelled = anyio.Event()

    async def serve(ctx: BridgeContext) -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # caught by the run's receiver, not the test's process
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    with anyio.fail_after(5):
        await serve_until_signalled(serve, context(tmp_path))
    assert cancelled.is_set()
