"""`happy daemon start|stop|status`: the bridge to Happy's server, one per HAPPY_HOME_DIR (and the
Thin: parse, call happy_launcher.bridge, print."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from happy_launcher.cli.errors import fail
from happy_launcher.errors import DaemonError, HappyError
from happy_launcher.home.dirs import happy_home

daemon_app = typer.Typer(
    help="The bridge to Happy's server (the relay to the Happy app): one per HAPPY_HOME_DIR, "
    "started by `happy claude` when logged in.",
    no_args_is_help=True,
)

NOT_RUNNING = 1


@daemon_app.command()
def start(
    server: Annotated[
        str | None,
        typer.Option("--server", help="Happy's server (default: HAPPY_SERVER_URL, else Happy's hosted one)."),
    ] = None,
    allow_dir: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-dir",
            metavar="DIR",
            help="A directory the app may start sessions in (and under); repeat for more. Replaces the "
            "kept list (default: your home directory).",
        ),
    ] = None,
    max_sessions: Annotated[
        int | None,
        typer.Option(
            "--max-sessions",
            metavar="N",
            help="At most this many sessions started from the app or the page at once (8).",
        ),
    ] = None,
    push_url: Annotated[
        str | None,
        typer.Option(
            "--push-url",
            metavar="URL",
            help='Send notifications to this Expo-compatible push service yourself ("": let Happy\'s '
            "server send them, the default). Kept; applies at the bridge's next start.",
        ),
    ] = None,
    long_turn: Annotated[
        float | None,
        typer.Option(
            "--long-turn",
            metavar="SECONDS",
            help="Notify when a turn this long ends (20). Kept, as --push-url.",
        ),
    ] = None,
) -> None:
    """Start the bridge in the background unless it runs; exit 1 if not logged in or if it dies.
    Where the app may start sessions is kept in HAPPY_HOME_DIR and applies at once, running or not."""
    from pathlib import Path

    from happy_launcher.bridge.app.notify import configure_push
    from happy_launcher.bridge.keys.credentials import read_credentials
    from happy_launcher.bridge.keys.server import SERVER_ENV
    from happy_launcher.bridge.process import daemon
    from happy_launcher.bridge.process.report import read_status
    from happy_launcher.spawn.dirs import configure

    try:
        home = happy_home(os.environ)
        if read_credentials(home) is None:
            raise DaemonError("not logged in: run `happy auth login`")
        if allow_dir or max_sessions is not None:
            configure(home, Path.home(), allow_dir or [], max_sessions)
        if push_url is not None or long_turn is not None:
            configure_push(home, push_url, long_turn)
        env = {**os.environ, SERVER_ENV: server} if server else dict(os.environ)
        started = daemon.start(home, env)
        status = read_status(home)
        if not started.already and status is not None and status.state == "stopped":
            raise DaemonError(f"the bridge did not start ({status.line()}): see {home / daemon.LOG_FILE}")
    except HappyError as error:
        raise fail(error) from None
    if started.already:
        typer.echo(f"the bridge already runs (pid {started.pid}): see `happy daemon status`")
    elif not started.settled or status is None:
        typer.echo(f"the bridge started (pid {started.pid}), still connecting: see `happy daemon status`")
    else:
        typer.echo(f"the bridge started (pid {started.pid}): {status.line()}")


@daemon_app.command()
def stop() -> None:
    """Stop the bridge (SIGTERM; SIGKILL after 10 s)."""
    from happy_launcher.bridge.process.daemon import stop as stop_bridge

    try:
        pid = stop_bridge(happy_home(os.environ))
    except HappyError as error:
        raise fail(error) from None
    typer.echo("not running" if pid is None else f"stopped (pid {pid})")


@daemon_app.command()
def status(
    as_json: Annotated[
        bool, typer.Option("--json", help="The status file, plus `running`, as JSON.")
    ] = False,
) -> None:
    """Whether the bridge runs (exit 0) or not (exit 1); its pid, server, state and last error."""
    import dataclasses
    import json

    from happy_launcher.bridge.process.daemon import running
    from happy_launcher.bridge.process.report import read_status

    try:
        home = happy_home(os.environ)
        owner = running(home)
        last = read_status(home)
    except HappyError as error:
        raise fail(error) from None
    if as_json:
        body = {"running": owner is not None, **(dataclasses.asdict(last) if last else {})}
        typer.echo(json.dumps(body, indent=2))
    elif owner is None:
        typer.echo("not running" + (f" (last state: {last.line()}, {last.updated_at})" if last else ""))
    else:
        typer.echo(f"running (pid {owner.pid})")
        if last is not None and last.pid == owner.pid:
            typer.echo(f"server: {last.server}\nstate: {last.line()}\nupdated: {last.updated_at}")
    if owner is None:
        raise typer.Exit(NOT_RUNNING)
