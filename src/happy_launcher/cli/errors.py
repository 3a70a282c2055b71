"""How a verb reports a HappyError (one line on stderr, the error's exit code), and lets go of
an output its reader closed."""

from __future__ import annotations

import contextlib
import os
import sys

from happy_launcher.errors import HappyError

INTERRUPTED = 130  # a verb stopped by Ctrl-C, as a shell reports SIGINT


def report(error: HappyError) -> int:
    """Say `error` in one line; its exit code. The line can quote Claude, the session or a
    permission's title: its control characters are shown, never obeyed."""
    from happy_launcher.terminal.plain_text import visible

    sys.stderr.write(f"happy: {visible(str(error))}\n")
    return error.exit_code


def fail(error: HappyError) -> SystemExit:
    """`raise fail(error)`: report it and end the verb with its exit code."""
    return SystemExit(report(error))


def discard_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for a failed or closed output must not
    fail again, with a traceback, when Python flushes it at exit."""
    with contextlib.suppress(OSError, ValueError):  # not a real file (tests): nothing to do
        stdout = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout)
        os.close(devnull)
