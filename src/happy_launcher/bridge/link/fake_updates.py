"""An account's socket kept in memory, beside the real one (`bridge/link/updates.py`): what the bridge
emitted and called is recorded; `update-state`, `update-metadata` and `machine-update-metadata` are
compare-and-set on a version per session (machine), as the server does them; `down` makes calls
fail as an outage would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from happy_launcher.errors import HappyServerError


class FakeUpdates:
    def __init__(self) -> None:
        self.emitted: list[tuple[str, dict[str, Any]]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.versions: dict[tuple[str, str], int] = {}  # (event, sid) -> the server's version
        self.values: dict[tuple[str, str], str] = {}  # (event, sid) -> the last value accepted
        self.down = False
        self._changed = anyio.Event()

    async def until(self, done: Callable[[], bool]) -> None:
        """Wait until `done()` holds, checked after each emit and call (bound it with fail_after)."""
        while not done():
            await self._changed.wait()
            self._changed = anyio.Event()

    def _tell(self) -> None:
        self._changed.set()

    async def emit(self, event: str, data: dict[str, Any]) -> None:
        if not self.down:
            self.emitted.append((event, data))
            self._tell()

    async def call(self, event: str, data: dict[str, Any]) -> Any:
        if self.down:
            raise HappyServerError("the fake server is down")
        self.calls.append((event, data))
        self._tell()
        field = {"update-state": "agentState"}.get(event, "metadata")
        key = (event, str(data.get("sid", data.get("machineId"))))
        version = self.versions.get(key, 0)
        if data["expectedVersion"] != version:
            return {"result": "version-mismatch", "version": version, field: self.values.get(key)}
        self.versions[key] = version + 1
        self.values[key] = data[field]
        return {"result": "success", "version": version + 1, field: data[field]}

    def events(self, name: str) -> list[dict[str, Any]]:
        return [data for event, data in self.emitted if event == name]
