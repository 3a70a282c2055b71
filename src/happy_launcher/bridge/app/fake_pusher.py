"""The in-memory `Pusher` (bridge/app/notify.py) for tests: what was pushed, a push that can be
held back (a slow push service) and failures to give first."""

from __future__ import annotations

import anyio

from happy_launcher.bridge.app.notify import PushFailed
from happy_launcher.control.attention import Attention


class FakePusher:
    def __init__(self, *, failures: int = 0, held: bool = False) -> None:
        self.pushed: list[Attention] = []
        self.tries = 0
        self._failures = failures
        self.release = anyio.Event()  # a held pusher answers once this is set
        if not held:
            self.release.set()
        self.arrived = anyio.Event()  # set at the first push asked for
        self._grew = anyio.Event()

    async def push(self, attention: Attention) -> str:
        self.tries += 1
        self.arrived.set()
        await self.release.wait()
        if self._failures:
            self._failures -= 1
            raise PushFailed("the push service is down")
        self.pushed.append(attention)
        self._grew.set()
        self._grew = anyio.Event()
        return "sent"

    async def until_pushed(self, count: int) -> None:
        while len(self.pushed) < count:
            await self._grew.wait()
