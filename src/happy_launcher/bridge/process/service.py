"""What the bridge does while it runs (`serve`), and what it is given (`BridgeContext`).

The token is checked against the server first (connected, offline and retried with a capped
backoff, or refused: reported once and not retried); then sessions out (`sessions_out.py`) and
the live socket (`live.py`) run side by side until cancelled, the server's health going to the
status file as it changes."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol

import anyio

from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.link.retry import AnyioSleeper, Backoff, Retry, ServerHealth, Sleeper
from happy_launcher.bridge.process.report import Report
from happy_launcher.errors import ClaudeNotFoundError, HappyServerError
from happy_launcher.protocol import wall_clock_ms

TOKEN_BACKOFF = Backoff(first=1.0, cap=30.0)  # an unreachable server, asked again
CHECK_TIMEOUT = 10.0  # seconds for the token's check: `happy daemon start` waits for its answer
REFUSED = "the server refused the token: run `happy auth login`"


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
    """The token checked, then every session out to the server and the live socket beside it.
    A refused token stops here (reported): sessions run on, unsynced, until a new login."""
    async with HttpAccount(ctx.server) as account:
        if not await check_token(ctx, account, AnyioSleeper()):
            await anyio.sleep_forever()
    from happy_launcher.bridge.app.live import Live
    from happy_launcher.bridge.app.notify import Notifier, pusher_for, read_push_settings
    from happy_launcher.bridge.link.api import HttpHappyApi
    from happy_launcher.bridge.out.links import Links
    from happy_launcher.bridge.out.metadata import machine_facts
    from happy_launcher.bridge.out.sessions_out import sessions_out
    from happy_launcher.claude.binary import find_claude
    from happy_launcher.spawn.spawner import spawner_for
    from happy_launcher.store.sessions import SessionStore

    health = ServerHealth(changed=lambda h: _report_health(ctx.report, h))
    retry = Retry(AnyioSleeper(), Backoff(), health)
    machine = machine_facts(ctx.machine_id, ctx.home, os.environ)
    api = HttpHappyApi(ctx.server, ctx.credentials.token)
    store = SessionStore.open(ctx.home)
    settings = read_push_settings(ctx.home)
    pusher = pusher_for(settings, ctx.server, ctx.credentials.token)
    try:
        spawner = spawner_for(ctx.home, os.environ)
        claude = partial(_claude_found, partial(find_claude, os.environ))
        notifier = Notifier(ctx.home, pusher)
        links = Links()
        live = Live(
            ctx.home,
            ctx.server,
            store,
            api,
            retry,
            machine,
            wall_clock_ms,
            spawner,
            claude,
            links.look_now,
            notify=lambda attention, local: notifier.notify(attention, local=local),
            long_turn=settings.long_turn,
        )
        links.on_link = live.linked
        async with anyio.create_task_group() as tg:
            tg.start_soon(notifier.run)
            tg.start_soon(live.run, ctx.credentials.token, ctx.credentials)
            out = partial(sessions_out, links=links, health=health)
            tg.start_soon(out, ctx.home, ctx.server, ctx.credentials, ctx.machine_id, api)
    finally:
        store.close()
        with anyio.CancelScope(shield=True):
            await api.aclose()
            await pusher.aclose()


def _report_health(report: Report, health: ServerHealth) -> None:
    if health.error is None:
        report.state("connected")
    else:
        report.state("unauthorized" if health.unauthorized else "offline", health.error)


async def check_token(
    ctx: BridgeContext, account: Account, sleeper: Sleeper, backoff: Backoff = TOKEN_BACKOFF
) -> bool:
    """Ask until the server answers: True (connected) if it accepts the token, False (unauthorized,
    not asked again: a new login is needed) if it refuses it. Offline meanwhile."""
    failures = 0
    while True:
        try:
            answer = await account.check(ctx.credentials.token)
        except HappyServerError as error:
            failures += 1
            delay = backoff.delay(failures)
            ctx.report.state("offline", f"{error}; retrying in {delay:.0f} s")
            await sleeper.sleep(delay)
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


def _claude_found(find: Callable[[], Path]) -> bool:
    try:
        find()
    except ClaudeNotFoundError:
        return False
    return True
