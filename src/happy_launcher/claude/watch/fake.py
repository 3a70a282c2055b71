"""A `Watcher` the test drives, beside the real ones (`__init__.py`): a wait returns only when the
test says something changed, never on its own time-out, so what is read and when is the test's
to decide (the safety poll of the real ones would read everything now and then)."""

from __future__ import annotations

from collections.abc import Callable, Set
from pathlib import Path

import anyio


class FakeWatcher:
    def __init__(self) -> None:
        self.watched: set[Path] = set()  # directories and files as asked, existing or not
        self.closed = False
        self.hears = False  # what `hears_all` says
        self.waits: list[float] = []  # each wait's `within`
        self._changed: set[str] | None = set()
        self._woken = anyio.Event()
        self._waiting = anyio.Event()

    # The test's side.

    def change(self, *paths: Path) -> None:
        """These files changed: the current (or next) wait returns, and `changes` names them."""
        if self._changed is not None:
            self._changed.update(map(str, paths))
        self._woken.set()

    async def waiting(self) -> None:
        """Return once the watcher's owner waits (it has read what there was)."""
        await self._waiting.wait()

    # The `Watcher` side.

    def watch(self, directories: Set[Path], files: Set[Path] = frozenset()) -> None:
        self.watched |= directories | files

    async def wait(self, within: float) -> None:
        self.waits.append(within)
        self._waiting.set()
        try:
            await self._woken.wait()
        finally:
            self._waiting = anyio.Event()
        self._woken = anyio.Event()

    def wake(self) -> None:
        self._changed = None  # as the real ones: a woken wait says nothing of what changed
        self._woken.set()

    def listen(self, listener: Callable[[], None] | None) -> bool:
        return False  # the test drives waits

    def arm(self, within: float) -> None:
        pass

    def changes(self) -> set[str] | None:
        changed, self._changed = self._changed, set()
        return changed

    def hears_all(self) -> bool:
        return self.hears

    def unwatch(self) -> None:
        self.watched.clear()

    def close(self) -> None:
        self.closed = True
