"""The launchers of one `happy claude` run, and the run itself: the session loop with the
control socket beside it, for as long as the session runs in either mode."""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import anyio
import anyio.abc

from happy_launcher.claude.paths import transcript_path
from happy_launcher.runner.controller import SessionController
from happy_launcher.runner.loop import run_session
from happy_launcher.session.config import RunConfig
from happy_launcher.session.launcher import Launcher, LauncherExit, Run
from happy_launcher.session.ports import Mode, ShownMode
from happy_launcher.session.signals import RunSignals

_log = logging.getLogger(__name__)


class RunModes:
    """Makes the launcher a switch hands the session to (`session.loop.Modes`)."""

    def __init__(self, cfg: RunConfig) -> None:
        self._cfg = cfg

    def launcher(self, mode: Mode, claude_session_id: str) -> Launcher:
        if mode == "local":
            from happy_launcher.local.launcher import LocalLauncher

            return LocalLauncher(self._cfg, resume=claude_session_id)
        from happy_launcher.remote.launcher import RemoteLauncher  # heavy: the Agent SDK

        return RemoteLauncher(self._cfg, resume=claude_session_id)


async def run_controlled(
    ref: Run, launcher: Launcher, *, mode: ShownMode, cfg: RunConfig, switches: bool = True
) -> LauncherExit:
    """The session loop from `launcher` (in `mode`; a headless run is local mode that cannot
    switch), served on the control socket meanwhile. The run's signals are caught from before
    the socket is served until it is removed. `switches` False: a switch ends the loop (`happy
    attach` hands the session back to a run without a terminal, after this one)."""
    controller = make_controller(ref, cfg, mode=mode)
    first: Mode = "remote" if mode == "remote" else "local"
    stop = anyio.Event()
    signals = ref.signals = RunSignals()
    async with anyio.create_task_group() as caught:
        await caught.start(signals.serve)
        async with anyio.create_task_group() as tg:
            await tg.start(serve_control, controller, ref, stop)
            async with anyio.create_task_group() as checks:
                checks.start_soon(controller.check_continuity)
                try:
                    exit = await run_session(
                        ref,
                        launcher,
                        mode=first,
                        modes=RunModes(cfg) if switches else None,
                        switching=controller,
                    )
                finally:
                    checks.cancel_scope.cancel()
                    stop.set()  # the session has ended: its clients get its last envelopes, then EOF
        caught.cancel_scope.cancel()  # the socket is gone: nothing of the run is left to end
    return exit


def make_controller(ref: Run, cfg: RunConfig, *, mode: ShownMode) -> SessionController:
    transcript = functools.partial(transcript_path, cfg.env, cfg.cwd)
    terminal = os.isatty(cfg.stdin_fd) and os.isatty(cfg.stdout_fd)
    return SessionController(ref, mode=mode, pid=os.getpid(), transcript=transcript, terminal=terminal)


async def serve_control(
    controller: SessionController,
    ref: Run,
    stop: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """The control socket; if it cannot be served, Claude runs on without it (said in the log)."""
    status = _Once(task_status)
    try:
        from happy_launcher.control.server import serve

        await serve(controller, ref.home, task_status=status, stop=stop)
    except Exception:
        _log.exception("the control socket could not be served")
        status.started()


class _Once(anyio.abc.TaskStatus[Path]):
    """The socket's task status, which may be reported started again (the first one counts)."""

    def __init__(self, status: anyio.abc.TaskStatus[None]) -> None:
        self._status = status
        self._done = False

    def started(self, value: Path | None = None) -> None:
        if not self._done:
            self._done = True
            self._status.started()
