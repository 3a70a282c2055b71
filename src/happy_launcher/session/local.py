"""Local mode: Claude's TUI under our PTY while its transcripts are mirrored live (design §3).

Only light modules are imported here: Claude is spawned first, and the session and its tracker
(mapper, store, scanner: ~150 ms of imports) are loaded while Claude boots, so `happy claude`
starts as fast as `claude`.
"""

from __future__ import annotations

from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.claude.paths import project_dir
from happy_launcher.errors import ClaudeLaunchError
from happy_launcher.local.exits import ChildExit
from happy_launcher.local.hooks import HookChannel
from happy_launcher.local.launch import claude_argv, launch_plan
from happy_launcher.local.passthrough import run_passthrough
from happy_launcher.session.config import LocalConfig
from happy_launcher.session.home import run_dir
from happy_launcher.session.launcher import LauncherExit, SessionRef
from happy_launcher.session.loop import run_session
from happy_launcher.session.tracking import TrackerFactory, Tracking

__all__ = ["LocalConfig", "LocalLauncher", "run_local"]


async def run_local(cfg: LocalConfig, *, make_tracker: TrackerFactory | None = None) -> int:
    """Run one local session; Claude's exit code. `make_tracker`: see `Tracking`."""
    ref = SessionRef(cfg.home, cfg.cwd, events=cfg.events) if cfg.home is not None else None
    exit = await run_session(ref, LocalLauncher(cfg, make_tracker=make_tracker))
    return exit.code


class LocalLauncher:
    """Claude's TUI under our PTY, with a SessionStart hook that names each session id."""

    def __init__(self, cfg: LocalConfig, *, make_tracker: TrackerFactory | None = None) -> None:
        self._cfg = cfg
        self._make_tracker = make_tracker
        self.failure: Exception | None = None  # mirroring failed (Claude went on)

    async def run(self, session: SessionRef | None) -> LauncherExit:
        cfg = self._cfg
        launch = launch_plan(cfg.args.intent)
        if session is None:  # not mirrored: Claude as is
            argv = claude_argv(cfg.binary, cfg.args, launch, settings=cfg.args.user_settings)
            return _exit(await _run(cfg, argv, None))
        with HookChannel(run_dir(session.home)) as channel:
            settings = channel.write_settings(
                cfg.args.user_settings, cwd=cfg.cwd, enable_all_hooks=cfg.args.options.enable_hooks
            )
            argv = claude_argv(cfg.binary, cfg.args, launch, settings=str(settings))
            # Before the spawn: Claude may append to a resumed transcript at once (issue 7).
            existing = ExistingFiles.before_launch(project_dir(cfg.env, cfg.cwd), launch.known_sessions)
            tracking = Tracking(
                cfg, session, launch, channel.events_path, existing=existing, make=self._make_tracker
            )
            try:
                child = await _run(cfg, argv, tracking)
            finally:
                tracking.finish()
                self.failure = tracking.failure
            return _exit(child)


def _exit(child: ChildExit) -> LauncherExit:
    return LauncherExit("exited", code=child.code, stopped_by_us=child.stopped_by_us)


async def _run(cfg: LocalConfig, argv: list[str], tracking: Tracking | None) -> ChildExit:
    try:
        return await run_passthrough(
            argv,
            env=cfg.env,
            cwd=cfg.cwd,
            stdin_fd=cfg.stdin_fd,
            stdout_fd=cfg.stdout_fd,
            on_started=None if tracking is None else lambda _pty: tracking.run(),
        )
    except OSError as exc:
        raise ClaudeLaunchError(f"could not start {cfg.binary}: {exc.strerror or exc}") from exc
