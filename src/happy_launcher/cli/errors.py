"""How a verb reports a HappyError: one line on stderr, the error's exit code."""

from __future__ import annotations

import typer

from happy_launcher.errors import HappyError


def fail(error: HappyError) -> typer.Exit:
    # An error can quote a session's text (a permission title): its escape sequences are shown.
    from happy_launcher.terminal.plain_text import visible

    typer.echo(f"happy: {visible(str(error))}", err=True)
    return typer.Exit(error.exit_code)
