"""Waiting for changes in transcript directories: inotify on Linux (`inotify.py`), polling
elsewhere.

inotify wakes the scanner within a millisecond of Claude's write and costs nothing while idle;
watchfiles was not used because it delivers changes in batches at least `step` ms apart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Set
from pathlib import Path
from typing import Protocol

import anyio

from happy_launcher.claude.watch.inotify import InotifyWatcher

_log = logging.getLogger(__name__)


class Watcher(Protocol):
    def watch(self, directories: Set[Path], files: Set[Path] = frozenset()) -> None:
        """Make sure these directories (those that exist) are watched, with everything in them,
        and these files by themselves (their directories only for files arriving there)."""

    async def wait(self, within: float) -> None:
        """Return when something may have changed, when `wake` is called, or after `within` s."""

    def wake(self) -> None:
        """Make the current wait (or else the next one) return at once; when listening, call
        the listener soon."""

    def listen(self, listener: Callable[[], None] | None) -> bool:
        """Call `listener` from the event loop, instead of ending a wait, whenever a wait
        would have ended: events came, `wake`, or the time `arm` set ran out. None: stop.
        False when this watcher cannot (then `wait`)."""

    def arm(self, within: float) -> None:
        """When listening: call the listener within `within` s at the latest."""

    def changes(self) -> set[str] | None:
        """The paths (as `os.fspath` strings: cheap to hash) that changed since the last call;
        None when that is not known (a wait that timed out or was woken, lost events, polling):
        then the caller reads everything."""

    def hears_all(self) -> bool:
        """Every path asked for is watched, or its arrival will be heard (a watched directory
        it would appear in): no change can go unseen but by a fault, and the caller's periodic
        re-read is a safety net only. False when polling, or a watch failed or is missing."""

    def unwatch(self) -> None:
        """No more waits for now: drop the watches (a later `watch` adds them again)."""

    def close(self) -> None: ...


class PollingWatcher:
    """The fallback: every wait lasts the whole timeout; the caller re-reads its files."""

    def __init__(self) -> None:
        self._woken = False
        self._scope: anyio.CancelScope | None = None

    def watch(self, directories: Set[Path], files: Set[Path] = frozenset()) -> None:
        pass

    async def wait(self, within: float) -> None:
        if not self._woken:
            with anyio.move_on_after(within) as self._scope:
                await anyio.sleep_forever()
            self._scope = None
        self._woken = False

    def wake(self) -> None:
        self._woken = True
        if self._scope is not None:
            self._scope.cancel()

    def listen(self, listener: Callable[[], None] | None) -> bool:
        return False

    def arm(self, within: float) -> None:
        pass

    def changes(self) -> set[str] | None:
        return None

    def hears_all(self) -> bool:
        return False

    def unwatch(self) -> None:
        pass

    def close(self) -> None:
        pass


def make_watcher(*, force_polling: bool = False) -> Watcher:
    if not force_polling:
        try:
            return InotifyWatcher()
        except (OSError, AttributeError) as exc:  # not Linux, or inotify limits reached: poll instead
            _log.warning(
                "inotify unavailable (%s): transcripts are re-read periodically, records arrive later", exc
            )
    return PollingWatcher()
