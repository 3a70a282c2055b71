"""`happy claude [claude flags…]`: parse, build the config, run Claude. Kept lean: Claude's
start-up must not wait for imports it does not need, so each mode imports its own modules."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from happy_launcher.claude.args import HELP, ClaudeArgs, is_uuid, parse_happy_claude_args
from happy_launcher.claude.binary import find_claude
from happy_launcher.claude.paths import project_dir
from happy_launcher.claude.picks import resolve_pick
from happy_launcher.cli.errors import report
from happy_launcher.errors import HappyError, StoreError, UsageError, unwrapped
from happy_launcher.home.dirs import ACCESS_KEY, ensure_home, happy_home, run_dir
from happy_launcher.session.config import RunConfig
from happy_launcher.session.events_output import open_events_output

if TYPE_CHECKING:
    from happy_launcher.session.ports import ShownMode


def run(argv: Sequence[str]) -> int:
    try:
        with unwrapped():  # a task group's error is reported as itself
            return _run(argv)
    except HappyError as error:
        return report(error)


def _run(argv: Sequence[str]) -> int:
    args = parse_happy_claude_args(argv)
    if args.options.show_help:
        sys.stdout.write(HELP)
        return 0
    if args.options.remote:  # a refused flag or a bad value: said before anything starts
        from happy_launcher.remote.options import check_remote_flags

        check_remote_flags(args)
    env = dict(os.environ)
    binary = find_claude(env)
    if _asks_version(args):  # no session to mirror: step aside, Claude answers as itself
        os.execve(binary, [str(binary), *args.passthrough], env)
    # The session Claude would pick, named before the spawn: the run is bound to it from the start.
    args = args._replace(intent=resolve_pick(args.intent, project_dir(env, Path.cwd())))
    _refuse_busy_session(args, env)
    home = _usable_home(args, env)
    events = open_events_output(args.options.events) if args.options.events is not None else None
    cfg = RunConfig(args=args, binary=binary, env=env, cwd=Path.cwd(), home=home, events=events)
    from happy_launcher.runner.start import run_claude

    bridge = None if home is None or args.options.no_sync else functools.partial(start_bridge, home, env)
    return run_claude(cfg, _mode(args), spawned=bridge)


def _mode(args: ClaudeArgs) -> ShownMode:
    if args.options.remote:
        return "remote"
    # Without a terminal on both ends (pipes, scripts, CI) or with -p, Claude gets our stdio as
    # is: no PTY, no terminal handling, byte for byte what `claude` would print.
    if args.headless or not (os.isatty(0) and os.isatty(1)):
        return "headless"
    return "local"


def _asks_version(args: ClaudeArgs) -> bool:
    prompt = set(args.prompt_positions)
    return any(t in ("--version", "-v") for i, t in enumerate(args.passthrough) if i not in prompt)


def _refuse_busy_session(args: ClaudeArgs, env: Mapping[str, str]) -> None:
    """A session another live Claude holds is refused before anything starts: two front ends on
    one id fork its transcript silently (switching-facts §6). Known before launch for
    `--resume <uuid>` (and what `--continue` or a title was resolved to); a fork is a new session."""
    intent = args.intent
    if intent.kind == "resume" and not intent.fork and intent.resume_id and is_uuid(intent.resume_id):
        from happy_launcher.home.live_claudes import ensure_not_busy, registry_dir

        ensure_not_busy(registry_dir(env), intent.resume_id)


def start_bridge(home: Path, env: Mapping[str, str]) -> None:
    """Happy's bridge (`happy daemon`), started detached if this machine is logged in and none
    runs, once Claude is spawned; not waited for. Not logged in costs one stat and no import. Its
    failure is not Claude's: a debug line at most."""
    if not (home / ACCESS_KEY).exists():
        return
    try:
        from happy_launcher.bridge.process.daemon import start_detached

        start_detached(home, env)
    except Exception as exc:  # whatever it is, Claude runs on
        import logging

        logging.getLogger(__name__).debug("the bridge did not start: %s", exc)


def _usable_home(args: ClaudeArgs, env: Mapping[str, str]) -> Path | None:
    """happy's state directory, ready for this run; None (after one line on stderr) when it cannot
    be used: happy's own failures never keep Claude from running, it just runs unmirrored. Asking
    for --happy-events makes mirroring essential: then it is an error (exit 2)."""
    try:
        home = ensure_home(args.options.home or happy_home(env))
        run_dir(home)  # a real write: a read-only or full home fails here, before Claude starts
    except StoreError as exc:
        if args.options.events is not None:
            raise UsageError(f"{exc} (needed for --happy-events)") from None
        sys.stderr.write(f"happy: {exc}; running Claude without mirroring\n")
        return None
    return home
