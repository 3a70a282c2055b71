"""`happy web` (serve the page), `happy web devices`, `happy web revoke DEVICE`. Thin: parse,
call happy_launcher.web, print."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from happy_launcher.cli.errors import fail
from happy_launcher.errors import HappyError, UsageError
from happy_launcher.home.dirs import happy_home

if TYPE_CHECKING:
    from happy_launcher.web.devices import DeviceStore

web_app = typer.Typer(
    help="A web page to watch, drive, start and resume sessions (pair a phone with its QR)."
)


@web_app.callback(invoke_without_command=True)
def web(
    ctx: typer.Context,
    host: Annotated[
        str | None,
        typer.Option(help="Address to listen on (default 127.0.0.1; another one exposes the page)."),
    ] = None,
    lan: Annotated[
        bool, typer.Option("--lan", help="Listen on this machine's local network address (for a phone).")
    ] = False,
    port: Annotated[int, typer.Option(help="Port (0: any free one).", min=0, max=65535)] = 0,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Another host name the page may be reached by (repeatable)."),
    ] = None,
) -> None:
    """Serve the page for every running session under HAPPY_HOME_DIR; the first line printed is
    the URL to open, with a one-time pairing secret."""
    if ctx.invoked_subcommand is not None:
        return
    import anyio

    from happy_launcher.web.run import lan_address, serve

    try:
        if lan and host is not None:
            raise UsageError("--lan chooses the address itself: give --lan or --host, not both")
        address = lan_address() if lan else host or "127.0.0.1"
        home = happy_home(os.environ)
        anyio.run(lambda: serve(home, address, port, sys.stdout, os.environ, allow=allow_host or (), lan=lan))
    except HappyError as error:
        raise fail(error) from None
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _store() -> DeviceStore:
    from happy_launcher.web.devices import DeviceStore
    from happy_launcher.web.server import clock_ms

    return DeviceStore(happy_home(os.environ), clock_ms=clock_ms)


@web_app.command()
def devices() -> None:
    """List the paired devices."""
    try:
        listed = _store().devices()
    except HappyError as error:
        raise fail(error) from None
    for d in listed:
        typer.echo(f"{d.id}  {_when(d.created_at)}  last used {_when(d.last_seen)}  {d.name}")
    if not listed:
        typer.echo("no device is paired: run `happy web` and open its URL")


@web_app.command()
def revoke(
    device: Annotated[str, typer.Argument(help="The device's id (or a unique prefix), or its name.")],
) -> None:
    """Revoke a device's token: it is refused from now on, even by a running `happy web`."""
    try:
        gone = _store().revoke(device)
    except HappyError as error:
        raise fail(error) from None
    typer.echo(f"revoked {gone.id} ({gone.name})")


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")
