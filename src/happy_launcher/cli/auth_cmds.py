"""`happy auth login|status|logout`: the credentials for Happy's server, shared with Happy's own
CLI (HAPPY_HOME_DIR/access.key). Thin: parse, call happy_launcher.bridge, print."""

from __future__ import annotations

import os
import sys

from happy_launcher.cli.errors import INTERRUPTED, fail
from happy_launcher.cli.parsing import Group, Parser, parser
from happy_launcher.errors import HappyError
from happy_launcher.home.dirs import happy_home

_HERE = "happy_launcher.cli.auth_cmds"

NOT_LOGGED_IN = 1


def auth(prog: str, argv: list[str]) -> int:
    """Log in to Happy's server (the relay to the Happy app), as Happy's CLI does."""
    verbs = {name: f"{_HERE}:{name}" for name in ("login", "status", "logout")}
    return Group(prog, auth.__doc__ or "", (("commands", verbs),)).run(argv)


def with_server(p: Parser) -> Parser:
    """The --server option (the daemon's too)."""
    p.add_argument("--server", help="Happy's server (default: HAPPY_SERVER_URL, else Happy's hosted one).")
    return p


def login(prog: str, argv: list[str]) -> int:
    """Pair this terminal with the Happy app (scan the code, approve); saves HAPPY_HOME_DIR/access.key."""
    server = with_server(parser(prog, login)).parse_args(argv).server
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
            print(f"In the Happy app, scan this code or open this link to log in:\n{pairing.link}")
            segno.make(pairing.link, error="m").terminal(out=sys.stdout, compact=True)
            bound = f"up to {PAIRING_BOUND / 60:.0f} min; Ctrl-C cancels"
            print(f"Waiting for the app to approve, through {http.url} ({bound})", flush=True)

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
        print("happy: login cancelled; nothing was saved", file=sys.stderr)
        return INTERRUPTED
    print(f"Logged in to {http.url} ({credentials.variant} credentials, machine {machine_id})")
    return 0


def status(prog: str, argv: list[str]) -> int:
    """The server, logged in or not (exit 1 if not), the variant, the machine id (asks no server)."""
    server = with_server(parser(prog, status)).parse_args(argv).server
    from happy_launcher.bridge.keys.credentials import read_credentials, read_machine_id
    from happy_launcher.bridge.keys.server import server_url

    try:
        home = happy_home(os.environ)
        credentials = read_credentials(home)
        machine_id = read_machine_id(home)
    except HappyError as error:
        raise fail(error) from None
    print(f"server: {server_url(server, os.environ)}")
    if credentials is None:
        print(f"not logged in (no {home / 'access.key'}): run `happy auth login`")
        return NOT_LOGGED_IN
    print(f"logged in ({credentials.variant} credentials in {home / 'access.key'})")
    print(f"machine id: {machine_id or 'none yet'}")
    return 0


def logout(prog: str, argv: list[str]) -> int:
    """Remove this machine's credentials (HAPPY_HOME_DIR/access.key) and stop the bridge. The
    bridge holds the token; the machine id stays."""
    parser(prog, logout).parse_args(argv)
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
    print(said if stopped is None else f"{said}; the bridge stopped (pid {stopped})")
    return 0
