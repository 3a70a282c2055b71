"""The `happy` entry point: `happy claude …` (and plain `happy …`) go straight to Claude's own
argument parsing (cli/claude_cmd.py); the other verbs to their parsers (cli/app.py)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

VERBS = frozenset(
    {"replay", "protocol", "--help", "-h", "--version", "help"}
    | {"sessions", "send", "watch", "switch", "abort", "approve", "deny", "attach"}  # the control verbs
    | {"web"}
    | {"auth"}  # Happy's server; Claude's own `auth` stays reachable as `happy claude auth`
    | {"daemon"}  # the bridge to Happy's server
)


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 1 and not args[0].startswith("-"):
        _refuse_a_mistyped_verb(args[0])
    if not args or args[0] not in VERBS:
        # Claude's flags, parsed by claude/args.py: Claude's start-up loads no verb parser.
        from happy_launcher.cli.claude_cmd import run

        _exit_at_once(run(args[1:] if args and args[0] == "claude" else args))
    from happy_launcher.cli.app import run_app

    if args[0] == "help":  # like `git help`: the overview (`happy claude help` still asks Claude)
        args[0] = "--help"
    sys.exit(run_app(args))


def _refuse_a_mistyped_verb(word: str) -> None:
    from happy_launcher.cli.suggest import mistyped_verb

    verb = mistyped_verb(word, sorted(v for v in VERBS | {"claude"} if not v.startswith("-")))
    if verb is not None:
        sys.stderr.write(f"happy: did you mean `happy {verb}`? (to ask Claude, use `happy claude {word}`)\n")
        _exit_at_once(2)


def _exit_at_once(code: int) -> None:
    """Exit without the interpreter's teardown: Claude has exited and everything happy wrote is
    written and closed by now, and tearing down the mirror's modules would only delay our exit
    after Claude's (~7 ms, ~50 ms without the mirror's gc.freeze)."""
    if "logging" in sys.modules:  # happy.log: what the logging module may still hold
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or broken: nothing to save there
            stream.flush()
    os._exit(code)
