"""How a verb reports a HappyError: one line on stderr, the error's exit code."""

from __future__ import annotations

import sys

from happy_launcher.errors import HappyError


def report(error: HappyError) -> int:
    """Say `error` in one line; its exit code. The line can quote Claude, the session or a
    permission's title: its control characters are shown, never obeyed."""
    from happy_launcher.terminal.plain_text import visible

    sys.stderr.write(f"happy: {visible(str(error))}\n")
    return error.exit_code


def fail(error: HappyError) -> SystemExit:
    """`raise fail(error)`: report it and end the verb with its exit code."""
    return SystemExit(report(error))
