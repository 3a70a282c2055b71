"""`happy claude [claude flags…]`: parse, build the config, run local mode. Kept lean: Claude's
start-up must not wait for imports it does not need."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from happy_launcher.claude.binary import find_claude
from happy_launcher.errors import HappyError
from happy_launcher.local.args import HELP, parse_happy_claude_args
from happy_launcher.session.home import ensure_home, happy_home
from happy_launcher.session.local import LocalConfig, run_local

LOG_FILE = "happy.log"


def run(argv: Sequence[str]) -> int:
    try:
        args = parse_happy_claude_args(argv)
        if args.options.show_help:
            sys.stdout.write(HELP)
            return 0
        env = dict(os.environ)
        binary = find_claude(env)
        home = ensure_home(args.options.home or happy_home(env))
        _log_to(home / LOG_FILE)
        cfg = LocalConfig(args=args, binary=binary, env=env, cwd=Path.cwd(), home=home)
        # The PTY pump thread must get the GIL back quickly while the mirror works (imports,
        # parsing): 1 ms instead of 5 ms bounds how long a keystroke or an output chunk waits.
        sys.setswitchinterval(0.001)
        return anyio.run(run_local, cfg)
    except HappyError as error:
        sys.stderr.write(f"happy: {error}\n")
        return error.exit_code


def _log_to(path: Path) -> None:
    # Never the terminal: it belongs to Claude's TUI while it runs.
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("happy_launcher")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
