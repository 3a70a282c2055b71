"""The `happy` verbs other than `claude` (see cli/main.py). Thin: parse, build config, run."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from happy_launcher.cli.errors import INTERRUPTED, discard_stdout, fail
from happy_launcher.cli.parsing import Group, parser
from happy_launcher.errors import HappyError

_CONTROL = "happy_launcher.cli.control_cmds"

HAPPY = Group(
    prog="happy",
    doc="""Run Claude Code as `happy claude` and mirror the session as session-protocol envelopes.

    `happy claude ARGS…` (or plain `happy ARGS…`) runs Claude with Claude's own arguments; see
    `happy claude --help`.""",
    sections=(
        (
            "commands",
            {
                "claude": "happy_launcher.cli.app:claude",
                "replay": "happy_launcher.cli.app:replay",
                "protocol": "happy_launcher.cli.app:protocol",
            },
        ),
        (
            "driving a running session",
            {
                name: f"{_CONTROL}:{name}"
                for name in ("sessions", "send", "watch", "switch", "abort", "approve", "deny")
            }
            | {"attach": "happy_launcher.cli.attach_cmd:attach"},
        ),
        (
            "the web page and the Happy app",
            {
                "web": "happy_launcher.cli.web_cmds:web",
                "auth": "happy_launcher.cli.auth_cmds:auth",
                "daemon": "happy_launcher.cli.daemon_cmds:daemon",
            },
        ),
    ),
    options="  --version   happy's and Claude's versions\n  -h, --help  this help (also `happy help`)",
)


def run_app(args: Sequence[str]) -> int:
    """Run a verb; a bad command line is one line and exit 2, like every other error."""
    try:
        if list(args[:1]) == ["--version"]:
            return _version()
        return HAPPY.run(args)
    except SystemExit as done:  # --help, a bad command line, a reported error
        return done.code if isinstance(done.code, int) else 0
    except KeyboardInterrupt:  # Ctrl-C where a verb has nothing to say about it (`happy send` at stdin)
        return INTERRUPTED


def _version() -> int:
    import subprocess

    from happy_launcher.claude.binary import find_claude
    from happy_launcher.version import __version__

    print(f"happy {__version__}", flush=True)
    try:
        claude = find_claude(os.environ)
    except HappyError as error:
        raise fail(error) from None
    try:
        done = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=30, check=False)
        version = done.stdout.strip() or f"unknown (--version exited {done.returncode})"
    except (OSError, subprocess.TimeoutExpired) as exc:
        version = f"unknown ({exc})"
    print(f"claude {version} at {claude}")
    return 0


def claude(prog: str, argv: list[str]) -> int:
    """Run Claude Code under happy (all Claude flags pass through; see `happy claude --help`)."""
    from happy_launcher.cli.claude_cmd import run

    return run(argv)


def replay(prog: str, argv: list[str]) -> int:
    """Map a transcript and its subagent files to envelopes: one JSON per line on stdout."""
    p = parser(prog, replay)
    p.add_argument(
        "transcript",
        type=Path,
        metavar="TRANSCRIPT",
        help="A Claude session transcript (<session-id>.jsonl), a pipe, or - for stdin.",
    )
    p.add_argument("--follow", "-f", action="store_true", help="Keep tailing the transcript.")
    args = p.parse_args(argv)
    from happy_launcher.protocol import Cuid2Ids
    from happy_launcher.session.replay import replay_file

    try:
        summary = replay_file(args.transcript, Cuid2Ids(), sys.stdout.buffer, follow=args.follow)
    except HappyError as error:
        discard_stdout()
        raise fail(error) from None
    except BrokenPipeError:
        discard_stdout()
        return 0  # `happy replay x | head`: the reader has what it wanted
    print(summary.line(), file=sys.stderr)
    return 0


def protocol(prog: str, argv: list[str]) -> int:
    """The session protocol."""
    return Group(
        prog, protocol.__doc__ or "", (("commands", {"schema": "happy_launcher.cli.app:schema"}),)
    ).run(argv)


def schema(prog: str, argv: list[str]) -> int:
    """Print the JSON Schema of the session-protocol envelope."""
    parser(prog, schema).parse_args(argv)
    import json

    from happy_launcher.protocol import envelope_schema

    print(json.dumps(envelope_schema(), indent=2))
    return 0
