"""What the bridge does while it runs (`serve`), and what it is given (`BridgeContext`).

For now: the token checked against the server (connected, offline and retried with a capped
backoff, or refused: reported once and not retried), then nothing until cancelled. The work of
the bridge joins `serve` as children of its task group."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol

import anyio

from happy_launcher.bridge.credentials import Credentials
from happy_launcher.bridge.report import Report
from happy_launcher.errors import HappyServerError

FIRST_RETRY = 1.0  # seconds before the first retry of an unreachable server; doubled up to MAX_RETRY
MAX_RETRY = 30.0
CHECK_TIMEOUT = 10.0  # seconds for the token's check: `happy daemon start` waits for its answer
REFUSED = "the server refused the token: run `happy auth login`"

Sleep = Callable[[float], Awaitable[None]]  # anyio.sleep; a fake that returns at once in tests


@dataclass(frozen=True)
class BridgeContext:
    home: Path
    server: str  # bridge/server.server_url: no trailing slash
    credentials: Credentials
    machine_id: str
    report: Report


class Serve(Protocol):
    """The bridge's work; runs until cancelled (SIGTERM, SIGINT)."""

    async def __call__(self, ctx: BridgeContext) -> None: ...


class Account(Protocol):
    """The server's word on the account's token."""

    async def check(self, token: str) -> Literal["accepted", "refused"]:
        """HappyServerError (one line, never a header) if the server cannot say."""
        ...


async def serve(ctx: BridgeContext) -> None:
    async with HttpAccount(ctx.server) as account:
        await check_token(ctx, account, anyio.sleep)
    await anyio.sleep_forever()


async def check_token(ctx: BridgeContext, account: Account, sleep: Sleep) -> bool:
    """Ask until the server answers: True (connected) if it accepts the token, False (unauthorized,
    not asked again: a new login is needed) if it refuses it. Offline meanwhile."""
    delay = FIRST_RETRY
    while True:
        try:
            answer = await account.check(ctx.credentials.token)
        except HappyServerError as error:
            ctx.report.state("offline", f"{error}; retrying in {delay:.0f} s")
            await sleep(delay)
            delay = min(delay * 2, MAX_RETRY)
            continue
        if answer == "refused":
            ctx.report.state("unauthorized", REFUSED)
            return False
        ctx.report.state("connected")
        return True


class HttpAccount:
    """`GET /v1/account/settings` with the token: a cheap authenticated call (one row read)."""

    def __init__(self, url: str) -> None:
        import httpx

        self.url = url
        self._client = httpx.AsyncClient(base_url=url, timeout=CHECK_TIMEOUT)

    async def __aenter__(self) -> HttpAccount:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._client.aclose()

    async def check(self, token: str) -> Literal["accepted", "refused"]:
        import httpx

        try:
            answer = await self._client.get(
                "/v1/account/settings", headers={"Authorization": f"Bearer {token}"}
            )
        except httpx.TransportError as exc:
            raise HappyServerError(f"cannot reach {self.url} ({type(exc).__name__})") from None
        if answer.status_code == 401:
            return "refused"
        if answer.status_code != 200:
            raise HappyServerError(f"{self.url} answered HTTP {answer.status_code}")
        return "accepted"
