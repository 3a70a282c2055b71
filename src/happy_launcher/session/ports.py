"""What the control socket (`control/server.py`) asks of the running session, and what
it answers with. The server speaks the wire protocol (docs/control-protocol.md); the session
side (`runner/controller.py`) implements `Controller`. Kept apart so that either side can be
tested with a fake of the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from happy_launcher.errors import HappyError
from happy_launcher.protocol import Envelope

Mode = Literal["local", "remote"]
# What clients see: a headless run (`-p`, no terminal) drives Claude on happy's stdio, in neither mode.
ShownMode = Literal["local", "remote", "headless"]
SwitchOutcome = Literal["switched", "already-there"]  # what a `switch` did
AbortOutcome = Literal["aborted", "no-turn"]  # what an `abort` did
InputMode = Literal["inject", "switch"]  # how local mode takes a message (see SendRequest.mode)
MAX_MESSAGE = 1 << 20  # bytes of UTF-8: the largest message `send` takes (README, control-protocol.md)


def message_too_large(text: str) -> str | None:
    """Why `text` cannot be sent, in words, when it is over MAX_MESSAGE; else None."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_MESSAGE:
        return None
    return (
        f"the message is larger than 1 MiB ({size} bytes): shorten it, or write it to a file "
        "and send a message that names the file"
    )


class ControlRefused(HappyError):
    """The session cannot do what a control client asked, now or ever; the message says why
    (and what to do), and goes back to the client as the error reply."""


@dataclass(frozen=True, slots=True)
class SessionFacts:
    happy_session_id: str | None  # None until Claude has named its session (first hook)
    claude_session_id: str | None
    mode: ShownMode
    cwd: str
    pid: int
    started_at: int  # ms since the epoch
    busy: bool  # a turn is running


@dataclass(frozen=True, slots=True)
class Accepted:
    """An inbound message is stored (it will reach Claude exactly once); `duplicate`: its
    message id was seen before, and this is the first acceptance repeated."""

    message_seq: int
    duplicate: bool


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A permission request waiting for an answer from any client (or the terminal)."""

    id: str
    tool: str
    input: dict[str, Any]
    title: str
    origin: Literal["remote", "local"] = "remote"  # local: the TUI shows its own dialog too


Outcome = Literal["allowed", "denied", "withdrawn"]


@dataclass(frozen=True, slots=True)
class Decision:
    """How a permission request of the TUI's hook was settled; `withdrawn`: by nobody's answer
    (the TUI's own dialog decides). `message`: why it was denied; `interrupt`: also stop the turn."""

    outcome: Outcome
    message: str = ""
    interrupt: bool = False


class CommitSubscriber(Protocol):
    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None: ...


class PermissionWatcher(Protocol):
    def requested(self, request: PendingRequest) -> None: ...

    def settled(self, request_id: str, outcome: str) -> None: ...  # "allowed", "denied", "withdrawn"


class Controller(Protocol):
    """The running session, as the control server sees it. Async methods may take a while (a
    switch takes about a second); none of them may block the event loop."""

    def facts(self) -> SessionFacts: ...

    def history(self, after_seq: int, limit: int) -> list[tuple[int, bytes]]:
        """Stored envelopes with seq > `after_seq`, in seq order, as their JSON bytes."""
        ...

    def subscribe(self, subscriber: CommitSubscriber) -> Callable[[], None]:
        """Be told of every envelope committed from now on (called on the event loop, must not
        block); returns the unsubscribe function."""
        ...

    async def send(self, message_id: str, text: str, mode: InputMode | None = None) -> Accepted:
        """Store a user message for Claude (idempotent on `message_id`) and have it delivered
        (`mode`: how local mode takes it; None: the session's default): returns once it is
        stored, before Claude has taken it."""
        ...

    async def switch(self, to: Mode) -> SwitchOutcome:
        """Move the session to the other front end; returns once the switch has started
        (`switched`), or at once when it is there already. ControlRefused when it cannot be done."""
        ...

    async def abort(self) -> AbortOutcome:
        """End the running turn `cancelled` (`aborted`); `no-turn` when idle (nothing done)."""
        ...

    def pending_permissions(self) -> list[PendingRequest]: ...

    def answer(self, request_id: str, allow: bool, message: str | None) -> None:
        """Answer a pending permission request; ControlRefused if it is unknown or answered."""
        ...

    def watch_permissions(self, watcher: PermissionWatcher) -> Callable[[], None]:
        """Tell `watcher` of each request already pending (at once, in order), then of each new
        request and each settlement, until the returned function is called."""
        ...

    async def ask_permission(self, tool: str, tool_input: dict[str, Any]) -> Decision:
        """The TUI's PermissionRequest hook asks: a pending request until the first answer, or
        until it is withdrawn (never a deny for want of an answer). Cancelled: withdrawn."""
        ...
