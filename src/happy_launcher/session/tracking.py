"""The mirror beside a locally running Claude (PTY or direct), made on first need and kept from
ever stopping Claude."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.local.launch import Launch
from happy_launcher.session.config import LocalConfig

if TYPE_CHECKING:
    from happy_launcher.local.exits import ChildExit
    from happy_launcher.session.local_tracker import LocalTracker

_log = logging.getLogger(__name__)


class TrackerFactory(Protocol):
    def __call__(
        self, cfg: LocalConfig, launch: Launch, hook_events: Path | None, /, *, existing: ExistingFiles
    ) -> LocalTracker: ...


def _local_tracker(
    cfg: LocalConfig, launch: Launch, hook_events: Path | None, *, existing: ExistingFiles
) -> LocalTracker:
    from happy_launcher.session.local_tracker import LocalTracker  # heavy: after the spawn

    return LocalTracker(cfg, launch, hook_events, existing=existing)


class Tracking:
    """The tracker, made on first need: beside the running child, or at the end if the child
    was already gone by then. Its failures are contained: mirroring may stop, but the user's
    Claude session never does; the failure is reported once Claude has exited.

    `hook_events` is the file our SessionStart hook appends to (None: no hook was installed).
    `existing`: the transcripts as they were before Claude was spawned. `make` makes the tracker
    (tests slow it down through it)."""

    def __init__(
        self,
        cfg: LocalConfig,
        launch: Launch,
        hook_events: Path | None,
        *,
        existing: ExistingFiles,
        make: TrackerFactory | None = None,
    ) -> None:
        self._args = (cfg, launch, hook_events)
        self._existing = existing
        self._make = make if make is not None else _local_tracker
        self._tracker: LocalTracker | None = None
        self.failure: Exception | None = None

    def _get(self) -> LocalTracker:
        if self._tracker is None:
            self._tracker = self._make(*self._args, existing=self._existing)
        return self._tracker

    async def run(self) -> None:
        try:
            await self._get().run()
        except Exception as exc:
            self._failed(exc)
            await anyio.sleep_forever()  # Claude goes on; it is reported when Claude exits

    def finish(self, child: ChildExit | None) -> None:
        if self._tracker is not None or self.failure is None:  # close what it can, even after a failure
            try:
                self._get().finish(child)
            except Exception as exc:
                self._failed(exc)
        if self._tracker is not None:
            for failure in self._tracker.sink.stats.failures:  # e.g. the events file's disk is full
                sys.stderr.write(f"happy: {failure}: envelopes from then on were not written there\n")
        if self.failure is not None:
            sys.stderr.write(f"happy: mirroring this session failed: {self.failure} (details in happy.log)\n")

    def _failed(self, exc: Exception) -> None:
        _log.error("mirroring failed", exc_info=exc)
        if self.failure is None:
            self.failure = exc
