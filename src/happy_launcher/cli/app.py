"""The `happy` verbs other than `claude` (see cli/main.py). Thin: parse, build config, run."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from happy_launcher.cli.errors import fail
from happy_launcher.errors import HappyError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
protocol_app = typer.Typer(help="The session protocol.", no_args_is_help=True)
app.add_typer(protocol_app, name="protocol")


def run_app(args: list[str]) -> int:
    """Run the verbs; a bad command line is one line and exit 2, like every other error."""
    try:
        code = app(args, prog_name="happy", standalone_mode=False)
    except typer.TyperException as error:  # click's: a bad option, argument or value
        ctx = getattr(error, "ctx", None)
        if type(error).__name__ == "NoArgsIsHelpError":  # as typer tells it (its class is private)
            return error.exit_code  # `happy protocol`: its help is printed already
        where = ctx.command_path if ctx is not None else "happy"
        message = " ".join(error.format_message().split())  # click wraps some messages
        typer.echo(f"{where}: {message} (see `{where} --help`)", err=True)
        return error.exit_code
    except typer.Abort:  # stdin closed at a prompt
        return 1
    return code if isinstance(code, int) else 0


def _show_version(value: bool) -> None:
    if not value:
        return
    import subprocess

    from happy_launcher.claude.binary import find_claude
    from happy_launcher.version import __version__

    typer.echo(f"happy {__version__}")
    try:
        claude = find_claude(os.environ)
    except HappyError as error:
        raise fail(error) from None
    try:
        done = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=30, check=False)
        version = done.stdout.strip() or f"unknown (--version exited {done.returncode})"
    except (OSError, subprocess.TimeoutExpired) as exc:
        version = f"unknown ({exc})"
    typer.echo(f"claude {version} at {claude}")
    raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="happy's and Claude's versions."
        ),
    ] = False,
) -> None:
    """Run Claude Code as `happy claude` and mirror the session as session-protocol envelopes.

    `happy claude ARGS…` (or plain `happy ARGS…`) runs Claude with Claude's own arguments; see
    `happy claude --help`."""


@app.command(
    "claude",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def claude_command(ctx: typer.Context) -> None:
    """Run Claude Code under happy (all Claude flags pass through; see `happy claude --help`)."""
    from happy_launcher.cli.claude_cmd import run

    raise typer.Exit(run(list(ctx.args)))


@app.command()
def replay(
    transcript: Annotated[
        Path, typer.Argument(help="A Claude session transcript (<session-id>.jsonl), a pipe, or - for stdin.")
    ],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep tailing the transcript.")] = False,
) -> None:
    """Map a transcript and its subagent files to envelopes: one JSON per line on stdout."""
    from happy_launcher.protocol import Cuid2Ids
    from happy_launcher.session.replay import replay_file

    try:
        summary = replay_file(transcript, Cuid2Ids(), sys.stdout.buffer, follow=follow)
    except HappyError as error:
        _discard_stdout()
        raise fail(error) from None
    except BrokenPipeError:
        _discard_stdout()
        raise typer.Exit(0) from None  # `happy replay x | head`: the reader has what it wanted
    typer.echo(summary.line(), err=True)


def _discard_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for a failed or closed output must not
    fail again, with a traceback, when Python flushes it at exit."""
    with contextlib.suppress(OSError, ValueError):  # not a real file (tests): nothing to do
        stdout = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout)
        os.close(devnull)


@protocol_app.command("schema")
def protocol_schema() -> None:
    """Print the JSON Schema of the session-protocol envelope."""
    import json

    from happy_launcher.protocol import envelope_schema

    typer.echo(json.dumps(envelope_schema(), indent=2))


def _register_control_verbs() -> None:
    from happy_launcher.cli.attach_cmd import attach
    from happy_launcher.cli.control_cmds import register

    register(app)
    app.command(rich_help_panel="Driving a running session")(attach)


_register_control_verbs()


def _register_web() -> None:
    from happy_launcher.cli.web_cmds import web_app

    app.add_typer(web_app, name="web")


_register_web()


def _register_auth() -> None:
    from happy_launcher.cli.auth_cmds import auth_app

    app.add_typer(auth_app, name="auth")


_register_auth()


def _register_daemon() -> None:
    from happy_launcher.cli.daemon_cmds import daemon_app

    app.add_typer(daemon_app, name="daemon")


_register_daemon()
