"""The one way to start a `happy claude` run, in any mode: the TUI under our PTY (`local`),
Claude on our stdio (`headless`), or through the Agent SDK (`remote`).

Light to import, as is each launcher's `start`: Claude is spawned before anyio, the PTY
machinery and the session's modules are loaded (they load while Claude boots), and only then
does the run go on, under the session loop with the control socket beside it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from happy_launcher.errors import UsageError
from happy_launcher.session.config import RunConfig

if TYPE_CHECKING:
    from typing import TypeAlias

    from happy_launcher.session.launcher import FirstLauncher, LauncherExit
    from happy_launcher.session.ports import ShownMode

    # After an attached run: (its Claude session id, how it ended, the ending signal) -> the exit code.
    Attached: TypeAlias = Callable[[str | None, LauncherExit, int | None], Awaitable[int]]


def run_claude(
    cfg: RunConfig,
    mode: ShownMode,
    *,
    spawned: Callable[[], None] | None = None,
    attached: Attached | None = None,
) -> int:
    """Start the launcher of `mode`, then run it to the end of the run; happy's exit code.
    `spawned` runs once Claude is started: what must not delay Claude's start-up. `attached`
    (`happy attach`): a switch ends the run, and what happens next is its (runner/attach.py)."""
    launcher = first_launcher(cfg, mode, ctrl_t_switches=attached is not None)
    try:
        launcher.start()  # Claude first: the event loop and the mirror load while it boots
        if spawned is not None:
            spawned()
        import anyio

        from happy_launcher.home.logfile import log_to

        if cfg.home is not None:
            log_to(cfg.home)
        if mode == "local":
            # The PTY pump thread must get the GIL back quickly while the mirror works (imports,
            # parsing): 1 ms instead of 5 ms bounds how long a keystroke or an output chunk waits.
            sys.setswitchinterval(0.001)
        return anyio.run(functools.partial(run_started, cfg, launcher, mode=mode, attached=attached))
    finally:
        launcher.close()  # what the run never took over (the TUI's hook channel, Claude)


def first_launcher(cfg: RunConfig, mode: ShownMode, *, ctrl_t_switches: bool = False) -> FirstLauncher:
    """The launcher the run starts with; each mode imports only its own modules. `ctrl_t_switches`:
    in the TUI, Ctrl-T is happy's key for a switch (`happy attach`)."""
    if mode == "remote":
        if cfg.home is None:
            raise UsageError(
                "remote mode needs happy's home to keep the session: fix it (see above) and retry"
            )
        from happy_launcher.remote.launcher import RemoteLauncher  # heavy: the Agent SDK

        return RemoteLauncher(cfg)
    if mode == "headless":
        from happy_launcher.local.headless import HeadlessLauncher

        return HeadlessLauncher(cfg)
    from happy_launcher.local.launcher import LocalLauncher

    return LocalLauncher(cfg, ctrl_t_switches=ctrl_t_switches)


async def run_started(
    cfg: RunConfig, launcher: FirstLauncher, *, mode: ShownMode, attached: Attached | None = None
) -> int:
    """Run `launcher` (started, or started by its `run`) in `mode` under the session loop, served
    on the control socket; not mirrored (no happy home), just the launcher. Happy's exit code."""
    opts = cfg.args.options
    if cfg.home is None:  # not mirrored: no session to drive from elsewhere either
        exit = await launcher.run(None)
        claude_id = None if (start := launcher.claude_start) is None else start.session_id
    else:
        from happy_launcher.runner.modes import run_controlled
        from happy_launcher.session.launcher import Run

        run = Run(
            cfg.home,
            cfg.cwd,
            events=cfg.events,
            remote_input=opts.remote_input,
            starts_on=launcher.claude_start,
            # Remote mode binds its session as it connects, and has never re-sent the history.
            replay=opts.replay_existing and mode != "remote",
        )
        exit = await run_controlled(run, launcher, mode=mode, cfg=cfg, switches=attached is None)
        claude_id = run.claude_session_id
        if attached is not None:  # the session has ended here: its socket is gone, its Claude too
            return await attached(claude_id, exit, None if run.signals is None else run.signals.ended_by)
    if mode == "local":
        from happy_launcher.local.launcher import say_how_to_resume

        say_how_to_resume(cfg, claude_id)
    return exit.code
