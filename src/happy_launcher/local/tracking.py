"""The mirror beside a locally running Claude (PTY or direct), made on first need and kept from
ever stopping Claude."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.local.launch import Launch
from happy_launcher.session.config import RunConfig
from happy_launcher.session.launcher import Run

if TYPE_CHECKING:
    from happy_launcher.local.tracker import LocalTracker
    from happy_launcher.session.core import Session

_log = logging.getLogger(__name__)


class TrackerFactory(Protocol):
    def __call__(
        self,
        cfg: RunConfig,
        launch: Launch,
        hook_events: Path | None,
        /,
        *,
        existing: ExistingFiles,
        session: Session,
    ) -> LocalTracker: ...


def _local_tracker(
    cfg: RunConfig, launch: Launch, hook_events: Path | None, *, existing: ExistingFiles, session: Session
) -> LocalTracker:
    from happy_launcher.local.tracker import LocalTracker  # heavy: after the spawn

    return LocalTracker(cfg, launch, hook_events, existing=existing, session=session)


class Tracking:
    """The session and its tracker, made on first need: beside the running child, or at the end
    if the child was already gone by then. Their failures are contained: mirroring may stop,
    but the user's Claude session never does; the failure is reported once Claude has exited.

    `hook_events` is the file our SessionStart hook appends to (None: no hook was installed).
    `existing`: the transcripts as they were before Claude was spawned. `make` makes the tracker
    (tests slow it down through it)."""

    def __init__(
        self,
        cfg: RunConfig,
        ref: Run,
        launch: Launch,
        hook_events: Path | None,
        *,
        existing: ExistingFiles,
        make: TrackerFactory | None = None,
        on_prompt: Callable[[str], None] | None = None,
    ) -> None:
        self._args = (cfg, launch, hook_events)
        self._ref = ref
        self._existing = existing
        self._make = make if make is not None else _local_tracker
        self._tracker: LocalTracker | None = None
        self._on_prompt = on_prompt  # each prompt Claude takes (UserPromptSubmit hook)
        self.failure: Exception | None = None

    def _get(self) -> LocalTracker:
        if self._tracker is None:
            session = self._ref.get()
            self._tracker = self._make(*self._args, existing=self._existing, session=session)
            self._tracker.on_prompt = self._on_prompt
        return self._tracker

    async def run(self) -> None:
        try:
            await self._get().run()
        except Exception as exc:
            self._failed(exc)
            await anyio.sleep_forever()  # Claude goes on; it is reported when Claude exits

    def finish(self) -> None:
        """Claude is gone: the last reads (the session loop then ends the session)."""
        if self._tracker is not None or self.failure is None:  # close what it can, even after a failure
            try:
                self._get().finish()
            except Exception as exc:
                self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        _log.error("mirroring failed", exc_info=exc)
        if self.failure is None:
            self.failure = exc
