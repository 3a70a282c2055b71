"""Local mode: Claude's TUI under our PTY while its transcripts are mirrored live (design §3).

Only light modules are imported here: Claude is spawned first, and the tracker (mapper, store,
scanner: ~150 ms of imports) is loaded while Claude boots, so `happy claude` starts as fast as
`claude`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from happy_launcher.errors import HappyError
from happy_launcher.local.args import ClaudeArgs
from happy_launcher.local.hooks import HookChannel
from happy_launcher.local.launch import Launch, claude_argv, launch_plan
from happy_launcher.local.passthrough import run_passthrough
from happy_launcher.local.pty_session import ChildExit, PtySession

if TYPE_CHECKING:
    from happy_launcher.session.local_tracker import LocalTracker


_log = logging.getLogger(__name__)


class ClaudeLaunchError(HappyError):
    """Claude could not be started."""


@dataclass(frozen=True)
class LocalConfig:
    args: ClaudeArgs
    binary: Path
    env: Mapping[str, str]
    cwd: Path
    home: Path
    stdin_fd: int = 0
    stdout_fd: int = 1


class _Tracking:
    """The tracker, made on first need: beside the running child, or at the end if the child
    was already gone by then. Its failures are contained: mirroring may stop, but the user's
    Claude session never does; the failure is reported once Claude has exited."""

    def __init__(self, cfg: LocalConfig, launch: Launch, hook_events: Path) -> None:
        self._args = (cfg, launch, hook_events)
        self._tracker: LocalTracker | None = None
        self.failure: Exception | None = None

    def _get(self) -> LocalTracker:
        if self._tracker is None:
            from happy_launcher.session.local_tracker import LocalTracker  # heavy: after the spawn

            self._tracker = LocalTracker(*self._args)
        return self._tracker

    async def run(self, _pty: PtySession) -> None:
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
        if self.failure is not None:
            sys.stderr.write(f"happy: mirroring this session failed: {self.failure} (details in happy.log)\n")

    def _failed(self, exc: Exception) -> None:
        _log.error("mirroring failed", exc_info=exc)
        if self.failure is None:
            self.failure = exc


async def run_local(cfg: LocalConfig) -> int:
    """Run one local session; Claude's exit code."""
    launch = launch_plan(cfg.args.intent)
    with HookChannel(cfg.home / "run") as channel:
        settings = channel.write_settings(
            cfg.args.user_settings, cwd=cfg.cwd, enable_all_hooks=cfg.args.options.enable_hooks
        )
        argv = claude_argv(cfg.binary, cfg.args, launch, settings=str(settings))
        tracking = _Tracking(cfg, launch, channel.events_path)
        child: ChildExit | None = None
        try:
            child = await run_passthrough(
                argv,
                env=cfg.env,
                cwd=cfg.cwd,
                stdin_fd=cfg.stdin_fd,
                stdout_fd=cfg.stdout_fd,
                on_started=tracking.run,
            )
        except OSError as exc:
            raise ClaudeLaunchError(f"could not start {cfg.binary}: {exc.strerror or exc}") from exc
        finally:
            tracking.finish(child)
        return child.code
