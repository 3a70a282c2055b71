"""`happy claude` without a terminal (pipes, scripts, CI) or with `-p`: Claude runs on our own
stdin, stdout and stderr, byte for byte as `claude` would, and the session is still mirrored.

No hook is installed (`-p --output-format stream-json --verbose` would print its events), so the
session id must be known without one: it is pre-assigned for a fresh session or a fork, and is
the resumed id for `--resume <uuid>`, which is also what `--continue` and `--resume <title>`
become when happy can tell Claude's pick before the spawn (`claude/picks.py`); otherwise it is
the transcript that Claude writes to, found against a listing of the project's transcripts taken
before the spawn.

Claude is spawned before anything heavy is imported; the mirror (mapper, store: ~0.3 s of
imports) is set up while Claude works, and after Claude exits only a final read and one commit
are left.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import TYPE_CHECKING

from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.claude.paths import project_dir
from happy_launcher.errors import ClaudeLaunchError
from happy_launcher.local.direct import RELAYED, DirectExit, block_signals, spawn_direct, wait_direct
from happy_launcher.local.launch import claude_argv, claude_start, launch_plan
from happy_launcher.session.config import RunConfig

if TYPE_CHECKING:
    from happy_launcher.session.launcher import ClaudeStart, LauncherExit, Run

# Signals sent to happy itself (all relayed) end the run the conventional way, 128 + the signal,
# as they would end `claude` run directly, and as in the TUI.
_ENDING = RELAYED
_MIRROR_NICENESS = 10


class HeadlessLauncher:
    """Claude on our stdio until it exits, its transcript mirrored beside it; a watch-only run
    (mode `headless`): Claude reads nothing but our stdin, so it takes no messages and never
    switches."""

    def __init__(self, cfg: RunConfig) -> None:
        self._cfg = cfg
        self._launch = launch_plan(cfg.args.intent)
        self._spawned: tuple[int, ExistingFiles] | None = None  # Claude's pid; the files before it
        self.failure: Exception | None = None  # mirroring failed (Claude went on)

    @property
    def claude_start(self) -> ClaudeStart | None:
        return claude_start(self._launch, self._cfg.env, self._cfg.cwd)

    def start(self) -> None:
        """Spawn Claude, with the signals it is sent through us blocked until `run` waits."""
        cfg, launch = self._cfg, self._launch
        argv = claude_argv(cfg.binary, cfg.args, launch, settings=cfg.args.user_settings)
        # Before the spawn: Claude may append to a resumed transcript at once (issue 7).
        existing = ExistingFiles.before_launch(project_dir(cfg.env, cfg.cwd), launch.known_sessions)
        child_mask = block_signals()
        try:
            pid = spawn_direct(argv, cfg.env, child_mask)
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_SETMASK, child_mask)
            raise ClaudeLaunchError(f"could not start {cfg.binary}: {exc.strerror or exc}") from exc
        self._spawned = pid, existing
        if cfg.home is not None:
            # The mirror's set-up (imports, the store) must not slow Claude down: on a busy
            # machine Claude gets the CPU first. Only this process is lowered.
            with contextlib.suppress(OSError):
                os.nice(_MIRROR_NICENESS)

    def close(self) -> None:
        pass  # nothing to end: Claude is on our stdio, and ends with it

    async def run(self, session: Run | None) -> LauncherExit:
        import anyio
        import anyio.to_thread

        assert self._spawned is not None, "start() spawns Claude first"
        pid, existing = self._spawned
        if session is None:  # not mirrored (happy home unusable, already said)
            return _launcher_exit(await anyio.to_thread.run_sync(wait_direct, pid))
        from happy_launcher.local.front import WatchOnlyFront
        from happy_launcher.local.tracking import Tracking

        tracking = Tracking(self._cfg, session, self._launch, hook_events=None, existing=existing)
        # Watched like any session (`happy watch`, `happy sessions`), to the end of the run: no
        # launcher follows this one.
        session.front = WatchOnlyFront(session)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracking.run)
                child = await anyio.to_thread.run_sync(wait_direct, pid)
                tg.cancel_scope.cancel()
        finally:
            tracking.finish()
            self.failure = tracking.failure
        return _launcher_exit(child)


def _launcher_exit(child: DirectExit) -> LauncherExit:
    from happy_launcher.session.launcher import LauncherExit

    code = 128 + child.received if child.received in _ENDING else child.code
    # Interrupted (Ctrl-C, or a signal to happy): the turn in progress ends cancelled.
    stopped = child.received is not None or child.interrupted
    return LauncherExit("exited", code=code, stopped_by_us=stopped)
