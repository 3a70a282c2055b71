"""What in a session asks for its user's attention (issue 19's notifications): a permission
request, a question Claude asks, a long turn's end, a failed turn. Sans-IO and deterministic: the
faces (the bridge's pushes, the page's browser notifications) feed it what they read from the
control socket and the time, and decide themselves whether and how to tell.

The words are Happy's CLI's (its push titles; the body is the session's title, else its folder's
name), so a phone shows our sessions as it shows Happy's. Nothing of the request's input goes in:
a push passes through services we do not run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from happy_launcher.control.wire import Permission
from happy_launcher.protocol.envelope import Envelope
from happy_launcher.protocol.events import TurnEndEv

Kind = Literal["permission", "question", "done", "failed"]
QUESTION_TOOL = "AskUserQuestion"  # Claude's tool for asking its user; Happy pushes it as a question
TITLES: dict[Kind, str] = {
    "permission": "Permission request",
    "question": "Clarification needed",
    "done": "It's ready!",
    "failed": "It failed",
}


@dataclass(frozen=True)
class Attention:
    kind: Kind
    session_id: str
    key: str  # unique per event (a request's id, a turn's id): "never twice" keys on it
    title: str
    body: str
    request_id: str | None = None  # a permission's or question's
    tool: str | None = None


def session_title(summary: str | None, path: str | None) -> str:
    """The body Happy's CLI gives a session's pushes: its title, else its folder's name."""
    if summary and summary.strip():
        return summary.strip()
    name = PurePath(path.strip()).name if path and path.strip() else ""
    return name or "Session"


class AttentionTracker:
    """One session's events in, what deserves its user's attention out (None: nothing)."""

    def __init__(self, session_id: str, long_turn: float = 20.0, *, title: str = "Session") -> None:
        self.session_id = session_id
        self.long_turn = long_turn
        self.title = title  # the body of what follows; the caller updates it as the session is titled
        self._started: dict[str, float] = {}  # turn id -> when its first envelope was seen

    def permission(self, request: Permission) -> Attention | None:
        kind: Kind = "question" if request.tool == QUESTION_TOOL else "permission"
        return self._made(kind, request.id, request_id=request.id, tool=request.tool)

    def envelope(self, envelope: Envelope, now: float) -> Attention | None:
        """A turn that ends `long_turn` seconds or more after it was first seen -> "done"; a
        failed turn -> "failed" whatever its length; a cancelled one -> nothing (its user did it)."""
        turn = envelope.turn
        if turn is None:
            return None
        started = self._started.setdefault(turn, now)
        ev = envelope.ev
        if not isinstance(ev, TurnEndEv):
            return None
        del self._started[turn]
        if ev.status == "failed":
            return self._made("failed", turn)
        if ev.status == "completed" and now - started >= self.long_turn:
            return self._made("done", turn)
        return None

    def _made(
        self, kind: Kind, key: str, *, request_id: str | None = None, tool: str | None = None
    ) -> Attention:
        return Attention(kind, self.session_id, key, TITLES[kind], self.title, request_id, tool)
