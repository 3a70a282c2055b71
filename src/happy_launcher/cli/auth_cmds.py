"""`happy auth login|status|logout`: the credentials for Happy's server, shared with Happy's own
CLI (HAPPY_HOME_DIR/access.key). Thin: parse, call happy_launcher.bridge, print."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from happy_launcher.cli.errors import fail
from happy_launcher.errors import HappyError
from happy_launcher.home.dirs import happy_home

auth_app = typer.Typer(
    help="Log in to Happy's server (the relay to the Happy app), as Happy's CLI does.", no_args_is_help=True
)

CANCELLED = 130  # Ctrl-C, as a shell reports SIGINT
NOT_LOGGED_IN = 1

ServerOption = Annotated[
    str | None,
    typer.Option("--server", help="Happy's server (default: HAPPY_SERVER_URL, else Happy's hosted one)."),
]


@auth_app.command()
def login(server: ServerOption = None) -> None:
    """Pair this terminal with the Happy app (scan the code, approve); saves HAPPY_HOME_DIR/access.key."""
    import time

    import segno

    from happy_launcher.bridge.keys.auth import PAIRING_BOUND, Pairing, wait_for_approval
    from happy_launcher.bridge.keys.credentials import new_machine_id, write_credentials
    from happy_launcher.bridge.keys.server import HttpServer, server_url

    try:
        home = happy_home(os.environ)
        http = HttpServer(server_url(server, os.environ))
        pairing = Pairing()

        def announce() -> None:
            typer.echo(f"In the Happy app, scan this code or open this link to log in:\n{pairing.link}")
            segno.make(pairing.link, error="m").terminal(out=sys.stdout, compact=True)
            bound = f"up to {PAIRING_BOUND / 60:.0f} min; Ctrl-C cancels"
            typer.echo(f"Waiting for the app to approve, through {http.url} ({bound})")

        try:
            credentials = wait_for_approval(
                pairing, http, clock=time.monotonic, wait=time.sleep, announce=announce
            )
        finally:
            http.close()
        write_credentials(home, credentials)
        machine_id = new_machine_id(home)
    except HappyError as error:
        raise fail(error) from None
    except KeyboardInterrupt:
        typer.echo("happy: login cancelled; nothing was saved", err=True)
        raise typer.Exit(CANCELLED) from None
    typer.echo(f"Logged in to {http.url} ({credentials.variant} credentials, machine {machine_id})")


@auth_app.command()
def status(server: ServerOption = None) -> None:
    """The server, logged in or not (exit 1 if not), the variant, the machine id (asks no server)."""
    from happy_launcher.bridge.keys.credentials import read_credentials, read_machine_id
    from happy_launcher.bridge.keys.server import server_url

    try:
        home = happy_home(os.environ)
        credentials = read_credentials(home)
        machine_id = read_machine_id(home)
    except HappyError as error:
        raise fail(error) from None
    typer.echo(f"server: {server_url(server, os.environ)}")
    if credentials is None:
        typer.echo(f"not logged in (no {home / 'access.key'}): run `happy auth login`")
        raise typer.Exit(NOT_LOGGED_IN)
    typer.echo(f"logged in ({credentials.variant} credentials in {home / 'access.key'})")
    typer.echo(f"machine id: {machine_id or 'none yet'}")


@auth_app.command()
def logout() -> None:
    """Remove this machine's credentials (HAPPY_HOME_DIR/access.key) and stop the bridge, which
    holds the token; the machine id stays."""
    from happy_launcher.bridge.keys.credentials import remove_credentials
    from happy_launcher.bridge.process.daemon import stop as stop_bridge

    try:
        home = happy_home(os.environ)
        removed = remove_credentials(home)
        stopped = stop_bridge(home)  # after the removal: a `happy claude` meanwhile starts none
    except HappyError as error:
        raise fail(error) from None
    where = home / "access.key"
    said = f"logged out (removed {where})" if removed else "not logged in: nothing to remove"
    typer.echo(said if stopped is None else f"{said}; the bridge stopped (pid {stopped})")
