"""Local mode: Claude's TUI under our PTY while its transcripts are mirrored live (design §3).

Claude is spawned first: `LocalLauncher.start` needs no event loop and only light modules, so
`happy claude` spawns Claude before anyio and the PTY machinery are even loaded, and the session
and its tracker (mapper, store, scanner: ~150 ms of imports) are loaded while Claude boots.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from typing import TYPE_CHECKING, NamedTuple

from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.claude.paths import project_dir, transcript_path
from happy_launcher.errors import ClaudeLaunchError
from happy_launcher.home.dirs import run_dir, settings_dir, socket_path
from happy_launcher.local.hooks import HookChannel
from happy_launcher.local.launch import Launch, claude_argv, claude_start, launch_plan, relaunch
from happy_launcher.local.pty_start import StartedPty, start_pty
from happy_launcher.session.config import RunConfig

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from happy_launcher.local.exits import ChildExit
    from happy_launcher.local.pty_session import PtySession
    from happy_launcher.local.tracking import TrackerFactory, Tracking
    from happy_launcher.session.launcher import ClaudeStart, LauncherExit, Run
    from happy_launcher.terminal.guard import SignalReceiver


def say_how_to_resume(cfg: RunConfig, claude_session_id: str | None) -> None:
    """After Claude's own resume hint, happy's: resumed through happy, the conversation stays in
    its happy session. Only for a conversation there is (Claude wrote its transcript)."""
    if claude_session_id is None or not transcript_path(cfg.env, cfg.cwd, claude_session_id).is_file():
        return
    home = cfg.args.options.home
    words = ["happy", "claude", *(["--happy-home", str(home)] if home is not None else [])]
    sys.stderr.write(f"Resume with: {shlex.join([*words, '--resume', claude_session_id])}\n")


class _Started(NamedTuple):
    launch: Launch
    argv: list[str]
    hook_events: Path | None  # None: not mirrored
    existing: ExistingFiles
    pty: StartedPty


class LocalLauncher:
    """Claude's TUI under our PTY, with a SessionStart hook that names each session id.
    `resume`: a later launch in the run (after remote mode), on that Claude session.
    `ctrl_t_switches`: Ctrl-T is happy's and asks for a switch (`happy attach`: hands it back)."""

    def __init__(
        self,
        cfg: RunConfig,
        *,
        make_tracker: TrackerFactory | None = None,
        resume: str | None = None,
        ctrl_t_switches: bool = False,
    ) -> None:
        self._cfg = cfg
        self._ctrl_t_switches = ctrl_t_switches
        self._make_tracker = make_tracker
        self._resume = resume
        # Made now, not at the spawn: the session binds to what it runs on before Claude starts.
        if resume is None:
            self._launch = launch_plan(cfg.args.intent)
        else:  # before the first prompt there is no transcript to resume: the same id, anew
            started = transcript_path(cfg.env, cfg.cwd, resume).exists()
            self._launch = relaunch(resume, has_transcript=started)
        self._started: _Started | None = None
        self._cleanup = contextlib.ExitStack()  # the hook channel; Claude, if never run
        self.failure: Exception | None = None  # mirroring failed (Claude went on)

    def start(self) -> None:
        """Spawn Claude (with our hook when the run is mirrored), without an event loop; `run`
        takes it over. `close` ends what `run` never took over."""
        cfg, launch = self._cfg, self._launch
        settings, hook_events = cfg.args.user_settings, None
        if cfg.home is not None:
            channel = HookChannel(run_dir(cfg.home), kept_dir=settings_dir(cfg.home))
            self._cleanup.enter_context(channel)
            settings = str(
                channel.write_settings(
                    settings,
                    cwd=cfg.cwd,
                    enable_all_hooks=cfg.args.options.enable_hooks,
                    # The control socket this run will serve: its permission requests (issue 10 §1).
                    control_socket=socket_path(cfg.home, os.getpid()),
                )
            )
            hook_events = channel.events_path
        argv = claude_argv(cfg.binary, cfg.args, launch, settings=settings)
        # Before the spawn: Claude may append to a resumed transcript at once (issue 7).
        existing = ExistingFiles.before_launch(project_dir(cfg.env, cfg.cwd), launch.known_sessions)
        try:
            pty = start_pty(argv, env=cfg.env, cwd=cfg.cwd, stdin_fd=cfg.stdin_fd, stdout_fd=cfg.stdout_fd)
        except OSError as exc:
            raise ClaudeLaunchError(f"could not start {cfg.binary}: {exc.strerror or exc}") from exc
        self._cleanup.callback(pty.abandon)
        self._started = _Started(launch, argv, hook_events, existing, pty)

    def close(self) -> None:
        self._cleanup.close()

    @property
    def claude_start(self) -> ClaudeStart | None:
        """The Claude session this launch runs on, when known before the spawn."""
        return claude_start(self._launch, self._cfg.env, self._cfg.cwd)

    async def run(self, session: Run | None) -> LauncherExit:
        with self._cleanup:
            if self._started is None:
                self.start()
            assert self._started is not None
            if session is None or self._started.hook_events is None:  # not mirrored: Claude as is
                return _exit(await _run(self._cfg, self._started, None))
            import anyio  # loaded by now: run() runs in the event loop

            from happy_launcher.local.front import LocalFront
            from happy_launcher.local.tui_screen import TuiScreen

            screen = TuiScreen()
            front = session.front = LocalFront(session, screen)
            tracking = self._tracking(session, self._started, front.prompt_submitted)

            async def beside(pty: PtySession) -> None:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tracking.run)
                    tg.start_soon(front.serve, pty)

            on_ctrl_t = front.request_switch if self._ctrl_t_switches else None
            try:
                child = await _run(
                    self._cfg, self._started, beside, screen.observe, session.receive_signals, on_ctrl_t
                )
            finally:
                session.front = None
                tracking.finish()
                self.failure = tracking.failure
            if front.switched:
                return _switched(session)
            return _exit(child)

    def _tracking(self, session: Run, started: _Started, on_prompt: Callable[[str], None]) -> Tracking:
        from happy_launcher.local.tracking import Tracking

        return Tracking(
            self._cfg,
            session,
            started.launch,
            started.hook_events,
            existing=started.existing,
            make=self._make_tracker,
            on_prompt=on_prompt,
        )


def _switched(session: Run) -> LauncherExit:
    """Stopped for a switch: a turn Claude did not close (no interrupt record) ends `cancelled`."""
    from happy_launcher.local.front import turn_open
    from happy_launcher.session.launcher import LauncherExit  # loaded after the spawn

    if turn_open(session):
        session.get().close_turn("cancelled")
    return LauncherExit("switch")


def _exit(child: ChildExit) -> LauncherExit:
    from happy_launcher.session.launcher import LauncherExit  # loaded after the spawn

    return LauncherExit("exited", code=child.code, stopped_by_us=child.stopped_by_us)


async def _run(
    cfg: RunConfig,
    started: _Started,
    beside: Callable[[PtySession], Awaitable[None]] | None,
    on_output: Callable[[bytes], None] | None = None,
    signals: SignalReceiver | None = None,
    on_ctrl_t: Callable[[], None] | None = None,
) -> ChildExit:
    import anyio

    from happy_launcher.local.passthrough import run_passthrough  # heavy: after the spawn

    try:
        return await run_passthrough(
            started.argv,
            env=cfg.env,
            cwd=cfg.cwd,
            stdin_fd=cfg.stdin_fd,
            stdout_fd=cfg.stdout_fd,
            on_started=beside,
            on_output=on_output,
            started=started.pty,
            signals=signals or anyio.open_signal_receiver,
            on_ctrl_t=on_ctrl_t,
        )
    except OSError as exc:
        raise ClaudeLaunchError(f"could not start {cfg.binary}: {exc.strerror or exc}") from exc
