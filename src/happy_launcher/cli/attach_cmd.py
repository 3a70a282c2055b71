"""`happy attach [SESSION]`: a session running without a terminal (started from the phone) taken
into Claude's TUI here; Ctrl-T or closing the terminal hands it back (runner/attach.py). The
runner and the spawner load when the verb runs."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from happy_launcher.cli.errors import fail
from happy_launcher.cli.parsing import optional, parser
from happy_launcher.errors import HappyError, UsageError

if TYPE_CHECKING:
    from happy_launcher.runner.attach import Detached, Taken
    from happy_launcher.session.launcher import LauncherExit


def attach(prog: str, argv: list[str]) -> int:
    """Take a session that runs without a terminal (started from the phone) into Claude's TUI here.
    The same session, nothing lost. Ctrl-T, a `happy send` or closing the terminal hands it back
    (it runs on without a terminal, as before); /exit ends it."""
    p = optional(
        parser(prog, attach),
        "session",
        "A unique prefix of a happy or Claude session id, or its title "
        "(default: the one session running without a terminal).",
    )
    session = p.parse_args(argv).session
    try:
        return _attach(session)
    except HappyError as error:
        raise fail(error) from None


def _attach(selector: str | None) -> int:
    import anyio

    from happy_launcher.claude.args import parse_happy_claude_args
    from happy_launcher.claude.binary import find_claude
    from happy_launcher.home.dirs import ensure_home, happy_home
    from happy_launcher.home.live_claudes import ensure_not_busy, registry_dir
    from happy_launcher.local.launcher import say_how_to_resume
    from happy_launcher.runner.attach import after_attached, take_over
    from happy_launcher.runner.start import run_claude
    from happy_launcher.session.config import RunConfig
    from happy_launcher.spawn.system import Processes

    if not (os.isatty(0) and os.isatty(1)):
        raise UsageError("happy attach opens Claude's TUI: run it in a terminal")
    env = dict(os.environ)
    home = ensure_home(happy_home(env))
    binary = find_claude(env)  # before the detached run is ended: this one must be able to go on
    taken = anyio.run(functools.partial(take_over, home, selector, Processes()))
    view = taken.view
    assert view.claude_id is not None  # `choose` takes only a session with one
    ensure_not_busy(registry_dir(env), view.claude_id)
    args = parse_happy_claude_args(["--resume", view.claude_id, *taken.options()])
    cfg = RunConfig(args=args, binary=binary, env=env, cwd=Path(view.cwd), home=home)
    spawn = functools.partial(_spawn_detached, home, env, taken)

    async def after(claude_id: str | None, exit: LauncherExit, ended_by: int | None) -> int:
        code = await after_attached(view, spawn, claude_id, exit, ended_by)
        if code is not None:
            return code
        say_how_to_resume(cfg, claude_id)
        return exit.code

    return run_claude(cfg, "local", attached=after)


async def _spawn_detached(
    home: Path, env: dict[str, str], taken: Taken, directory: str, claude_id: str
) -> Detached:
    """The spawner's detached `happy claude --happy-remote --resume`, once its socket answers;
    with the model and permission mode the session was first started with."""
    import anyio

    from happy_launcher.runner.attach import Detached
    from happy_launcher.spawn.spawner import SpawnRequest, spawner_for

    spawner = spawner_for(home, env)
    request = SpawnRequest(
        directory, model=taken.model, permission_mode=taken.permission_mode, resume=claude_id
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(spawner.run)  # it reaps what it starts: cancelled below, the session runs on
        started = await spawner.start(request)
        tg.cancel_scope.cancel()
    return Detached(started.session_id, started.pid)
