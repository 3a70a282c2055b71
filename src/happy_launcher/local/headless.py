"""`happy claude` without a terminal (pipes, scripts, CI) or with `-p`: Claude runs on our own
stdin, stdout and stderr, byte for byte as `claude` would, and the session is still mirrored.

No hook is installed (`-p --output-format stream-json --verbose` would print its events), so the
session id must be known without one: it is pre-assigned for a fresh session or a fork, and is
the resumed id for `--resume <uuid>`; for `--continue` and `--resume <title>` it is the
transcript that Claude writes to, found against a listing of the project's transcripts taken
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
from happy_launcher.local.launch import claude_argv, launch_plan
from happy_launcher.session.config import RunConfig

if TYPE_CHECKING:
    from happy_launcher.local.tracking import Tracking
    from happy_launcher.session.launcher import LauncherExit, Run

# Signals sent to happy itself (all relayed) end the run the conventional way, 128 + the signal,
# as they would end `claude` run directly, and as in the TUI.
_ENDING = RELAYED
_MIRROR_NICENESS = 10


def run_headless(cfg: RunConfig) -> int:
    """Run Claude on our stdio until it exits, mirroring its transcript; the exit code."""
    launch = launch_plan(cfg.args.intent)
    argv = claude_argv(cfg.binary, cfg.args, launch, settings=cfg.args.user_settings)
    # Before the spawn: Claude may append to a resumed transcript at once (issue 7).
    existing = ExistingFiles.before_launch(project_dir(cfg.env, cfg.cwd), launch.known_sessions)
    child_mask = block_signals()
    try:
        pid = spawn_direct(argv, cfg.env, child_mask)
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, child_mask)
        raise ClaudeLaunchError(f"could not start {cfg.binary}: {exc.strerror or exc}") from exc
    if cfg.home is None:  # not mirrored (happy home unusable, already said)
        return _exit_code(wait_direct(pid))
    # The mirror's set-up (imports, the store) must not slow Claude down: on a busy machine
    # Claude gets the CPU first. Only this process is lowered; Claude keeps its priority.
    with contextlib.suppress(OSError):
        os.nice(_MIRROR_NICENESS)

    import anyio  # heavy from here on: Claude is already running

    from happy_launcher.home.logfile import log_to
    from happy_launcher.local.launch import claude_start
    from happy_launcher.local.tracking import Tracking
    from happy_launcher.session.launcher import Run

    log_to(cfg.home)
    start = claude_start(launch, cfg.env, cfg.cwd)
    ref = Run(cfg.home, cfg.cwd, events=cfg.events, starts_on=start, replay=cfg.args.options.replay_existing)
    tracking = Tracking(cfg, ref, launch, hook_events=None, existing=existing)
    outcome: list[DirectExit] = []
    anyio.run(_mirror_until_exit, cfg, ref, tracking, pid, outcome)
    return _exit_code(outcome[0])


async def _mirror_until_exit(
    cfg: RunConfig, ref: Run, tracking: Tracking, pid: int, outcome: list[DirectExit]
) -> None:
    import anyio
    import anyio.to_thread

    from happy_launcher.local.front import WatchOnlyFront
    from happy_launcher.runner.loop import end_session
    from happy_launcher.runner.modes import make_controller, serve_control

    stop = anyio.Event()
    async with anyio.create_task_group() as served:
        # Watched like any session (`happy watch`, `happy sessions`); Claude reads our stdin only.
        ref.front = WatchOnlyFront(ref)
        await served.start(serve_control, make_controller(ref, cfg, mode="headless"), ref, stop)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracking.run)
                outcome.append(await anyio.to_thread.run_sync(wait_direct, pid))
                tg.cancel_scope.cancel()
        finally:
            tracking.finish()
            exit = _launcher_exit(outcome[0]) if outcome else None
            end_session(ref, exit, launcher_failure=tracking.failure)
            stop.set()  # watchers get the session's last envelopes, then EOF


def _exit_code(child: DirectExit) -> int:
    if child.received in _ENDING:
        return 128 + child.received
    return child.code


def _launcher_exit(child: DirectExit) -> LauncherExit:
    from happy_launcher.session.launcher import LauncherExit

    # Interrupted (Ctrl-C, or a signal to happy): the turn in progress ends cancelled.
    stopped = child.received is not None or child.interrupted
    return LauncherExit("exited", code=child.code, stopped_by_us=stopped)
