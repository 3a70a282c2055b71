"""The remote-mode screen's interface with the session that drives it (see screen.py).

Kept apart from the screen itself so a launcher can name these types without importing `rich`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol


class ScreenActions(Protocol):
    """What the screen asks of the session. Each call is awaited in order, one at a time, except
    `interrupt`, which never waits behind the others. An exception is shown on the screen (and
    logged), never raised into it: the screen stays up."""

    async def send(self, text: str) -> None:
        """The user typed `text` and pressed Enter. The screen does not echo it: the session's
        user `text` envelope shows it, like a prompt from any other client."""

    async def interrupt(self) -> None:
        """Ctrl-C while a turn runs: abort the turn (it ends `cancelled`)."""

    async def answer_permission(self, request_id: str, allow: bool, *, stop: bool = False) -> None:
        """The user answered a permission prompt; `stop`: deny and stop the turn."""


@dataclass(frozen=True)
class StatusInfo:
    """The status line: whose session this is."""

    happy_session: str
    claude_session: str | None = None
    model: str | None = None


ExitReason = Literal["exit", "switch", "closed", "signal", "hangup"]


@dataclass(frozen=True)
class ScreenEnd:
    """Why `RemoteScreen.run` returned.

    `exit`: the user pressed Ctrl-C twice (or Ctrl-D on an empty line) while idle. `switch`: the
    user asked for local mode (Ctrl-T). `closed`: the session called `close()`. `signal`: we got
    `signal` (SIGTERM, SIGHUP, SIGINT, SIGQUIT); the caller should end as if it had killed us
    (exit code 128 + signal). `hangup`: the terminal went away (end of input).
    """

    reason: ExitReason
    signal: int | None = None
