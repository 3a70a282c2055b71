"""The `happy` entry point: `happy claude …` (and plain `happy …`) go straight to local mode
without loading typer; the other verbs go to the typer app."""

from __future__ import annotations

import sys
from collections.abc import Sequence

VERBS = frozenset({"replay", "protocol", "--help", "-h", "--version", "help"})


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in VERBS:
        # Claude's flags, parsed by us (not by typer): Claude's start-up must not wait for typer.
        from happy_launcher.cli.claude_cmd import run

        raise SystemExit(run(args[1:] if args and args[0] == "claude" else args))
    from happy_launcher.cli.app import app

    if args[0] == "help":  # like `git help`: the overview (`happy claude help` still asks Claude)
        args[0] = "--help"
    app(args, prog_name="happy")
