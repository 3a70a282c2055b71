"""`happy daemon start|stop|status`: the bridge to Happy's server, one per HAPPY_HOME_DIR. Thin:
parse, call happy_launcher.bridge, print."""

from __future__ import annotations

import os

from happy_launcher.cli.auth_cmds import with_server
from happy_launcher.cli.errors import fail
from happy_launcher.cli.parsing import Group, Parser, parser
from happy_launcher.errors import DaemonError, HappyError
from happy_launcher.home.dirs import happy_home

NOT_RUNNING = 1
_HERE = "happy_launcher.cli.daemon_cmds"


def daemon(prog: str, argv: list[str]) -> int:
    """The bridge to Happy's server (the relay to the Happy app). One per HAPPY_HOME_DIR, started
    by `happy claude` when logged in."""
    verbs = {name: f"{_HERE}:{name}" for name in ("start", "stop", "status")}
    return Group(prog, daemon.__doc__ or "", (("commands", verbs),)).run(argv)


def _start_parser(prog: str) -> Parser:
    p = with_server(parser(prog, start))
    p.add_argument(
        "--allow-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="A directory the app may start sessions in (and under); repeat for more. Replaces the "
        "kept list (default: your home directory).",
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        metavar="N",
        help="At most this many sessions started from the app or the page at once (8).",
    )
    p.add_argument(
        "--push-url",
        metavar="URL",
        help='Send notifications to this Expo-compatible push service yourself ("": let Happy\'s '
        "server send them, the default). Kept; applies at the bridge's next start.",
    )
    p.add_argument(
        "--long-turn",
        type=float,
        metavar="SECONDS",
        help="Notify when a turn this long ends (20). Kept, as --push-url.",
    )
    return p


def start(prog: str, argv: list[str]) -> int:
    """Start the bridge in the background unless it runs; exit 1 if not logged in or if it dies.
    Where the app may start sessions is kept in HAPPY_HOME_DIR and applies at once, running or not."""
    args = _start_parser(prog).parse_args(argv)
    allow_dir, max_sessions, push_url, long_turn = (
        args.allow_dir,
        args.max_sessions,
        args.push_url,
        args.long_turn,
    )
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
        env = {**os.environ, SERVER_ENV: args.server} if args.server else dict(os.environ)
        started = daemon.start(home, env)
        status = read_status(home)
        if not started.already and status is not None and status.state == "stopped":
            raise DaemonError(f"the bridge did not start ({status.line()}): see {home / daemon.LOG_FILE}")
    except HappyError as error:
        raise fail(error) from None
    if started.already:
        print(f"the bridge already runs (pid {started.pid}): see `happy daemon status`")
    elif not started.settled or status is None:
        print(f"the bridge started (pid {started.pid}), still connecting: see `happy daemon status`")
    else:
        print(f"the bridge started (pid {started.pid}): {status.line()}")
    return 0


def stop(prog: str, argv: list[str]) -> int:
    """Stop the bridge (SIGTERM; SIGKILL after 10 s)."""
    parser(prog, stop).parse_args(argv)
    from happy_launcher.bridge.process.daemon import stop as stop_bridge

    try:
        pid = stop_bridge(happy_home(os.environ))
    except HappyError as error:
        raise fail(error) from None
    print("not running" if pid is None else f"stopped (pid {pid})")
    return 0


def status(prog: str, argv: list[str]) -> int:
    """Whether the bridge runs (exit 0) or not (exit 1); its pid, server, state and last error."""
    p = parser(prog, status)
    p.add_argument(
        "--json", dest="as_json", action="store_true", help="The status file, plus `running`, as JSON."
    )
    as_json = p.parse_args(argv).as_json
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
        print(json.dumps(body, indent=2))
    elif owner is None:
        print("not running" + (f" (last state: {last.line()}, {last.updated_at})" if last else ""))
    else:
        print(f"running (pid {owner.pid})")
        if last is not None and last.pid == owner.pid:
            print(f"server: {last.server}\nstate: {last.line()}\nupdated: {last.updated_at}")
    return NOT_RUNNING if owner is None else 0
