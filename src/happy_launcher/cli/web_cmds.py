"""`happy web` (serve the page), `happy web devices`, `happy web revoke DEVICE`. Thin: parse,
call happy_launcher.web, print."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from happy_launcher.cli.errors import fail
from happy_launcher.cli.parsing import Group, parser
from happy_launcher.errors import HappyError, UsageError
from happy_launcher.home.dirs import happy_home

if TYPE_CHECKING:
    from happy_launcher.web.devices import DeviceStore

_HERE = "happy_launcher.cli.web_cmds"


def web(prog: str, argv: list[str]) -> int:
    """A web page to watch, drive, start and resume sessions (pair a phone with its QR).

    `happy web [OPTIONS]` serves the page for every running session under HAPPY_HOME_DIR; the
    first line printed is the URL to open, with a one-time pairing secret."""
    if argv and not argv[0].startswith("-"):
        devices_ = {"devices": f"{_HERE}:devices", "revoke": f"{_HERE}:revoke"}
        return Group(prog, web.__doc__ or "", (("commands", devices_),)).run(argv)
    return _serve(prog, argv)


def _port(text: str) -> int:
    port = int(text) if text.isdigit() else -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535)")
    return port


def _serve(prog: str, argv: list[str]) -> int:
    p = parser(prog, web)
    p.add_argument("--host", help="Address to listen on (default 127.0.0.1; another one exposes the page).")
    p.add_argument(
        "--lan", action="store_true", help="Listen on this machine's local network address (for a phone)."
    )
    p.add_argument("--port", type=_port, default=0, help="Port (0: any free one).")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="Another host name the page may be reached by (repeatable).",
    )
    p.epilog = (
        "commands: `happy web devices` lists the paired devices, `happy web revoke DEVICE` revokes one."
    )
    args = p.parse_args(argv)
    import anyio

    from happy_launcher.web.run import lan_address, serve

    try:
        if args.lan and args.host is not None:
            raise UsageError("--lan chooses the address itself: give --lan or --host, not both")
        address = lan_address() if args.lan else args.host or "127.0.0.1"
        home = happy_home(os.environ)
        allow, lan, port = args.allow_host, args.lan, args.port
        anyio.run(lambda: serve(home, address, port, sys.stdout, os.environ, allow=allow, lan=lan))
    except HappyError as error:
        raise fail(error) from None
    except KeyboardInterrupt:
        pass
    return 0


def _store() -> DeviceStore:
    from happy_launcher.web.devices import DeviceStore
    from happy_launcher.web.server import clock_ms

    return DeviceStore(happy_home(os.environ), clock_ms=clock_ms)


def devices(prog: str, argv: list[str]) -> int:
    """List the paired devices."""
    parser(prog, devices).parse_args(argv)
    try:
        listed = _store().devices()
    except HappyError as error:
        raise fail(error) from None
    for d in listed:
        print(f"{d.id}  {_when(d.created_at)}  last used {_when(d.last_seen)}  {d.name}")
    if not listed:
        print("no device is paired: run `happy web` and open its URL")
    return 0


def revoke(prog: str, argv: list[str]) -> int:
    """Revoke a device's token: it is refused from now on, even by a running `happy web`."""
    p = parser(prog, revoke)
    p.add_argument("device", metavar="DEVICE", help="The device's id (or a unique prefix), or its name.")
    device = p.parse_args(argv).device
    try:
        gone = _store().revoke(device)
    except HappyError as error:
        raise fail(error) from None
    print(f"revoked {gone.id} ({gone.name})")
    return 0


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")
