"""Calls to Happy's server that never give up: a failed call is tried again after a capped,
doubling delay (the clock behind a small Protocol), and the server's health is kept for
`happy daemon status` (unreachable, or the credentials refused)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import anyio

from happy_launcher.errors import HappyError, HappyServerError, HappyUnauthorizedError

_T = TypeVar("_T")
LOG = logging.getLogger("happy_launcher.bridge")


class Sleeper(Protocol):
    async def sleep(self, seconds: float) -> None: ...


class AnyioSleeper:
    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


@dataclass(frozen=True, slots=True)
class Backoff:
    first: float = 0.25  # seconds before the first retry
    cap: float = 15.0  # the longest wait between two tries

    def delay(self, failures: int) -> float:
        return float(min(self.cap, self.first * 2 ** min(failures - 1, 32)))


@dataclass(slots=True)
class ServerHealth:
    """The last call's outcome: None while the server answers; else its one-line error.
    `changed` is told of each change (the daemon's status file)."""

    error: str | None = None
    unauthorized: bool = False
    changed: Callable[[ServerHealth], None] | None = None

    def set(self, error: str | None, unauthorized: bool = False) -> None:
        if (error, unauthorized) == (self.error, self.unauthorized):
            return
        self.error, self.unauthorized = error, unauthorized
        if self.changed is not None:
            self.changed(self)


@dataclass(frozen=True, slots=True)
class Retry:
    sleeper: Sleeper
    backoff: Backoff
    health: ServerHealth

    async def call(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """`call()`'s answer, however many tries it takes (HappyServerError means try again)."""
        failures = 0
        while True:
            try:
                answer = await call()
            except HappyServerError as exc:
                failures += 1
                if self.health.error != str(exc):  # one line per kind of outage, not per try
                    LOG.warning("%s; retrying", exc)
                self.health.set(str(exc), isinstance(exc, HappyUnauthorizedError))
                await self.sleeper.sleep(self.backoff.delay(failures))
                continue
            if self.health.error is not None:
                LOG.info("Happy's server answers again")
                self.health.set(None)
            return answer


def log_failure(what: str, exc: Exception) -> None:
    """One session's failure, in the log: one line for a failure happy knows (HappyError), the
    traceback for a bug. The bridge goes on with the other sessions."""
    if isinstance(exc, HappyError):
        LOG.error("%s: %s", what, exc)
    else:
        LOG.exception("%s: a bug in happy (please report it)", what)
