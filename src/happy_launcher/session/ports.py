"""What the control socket (`control/server.py`) asks of the running session, and what
it answers with. The server speaks the wire protocol (docs/control-protocol.md); the session
side (`runner/controller.py`) implements `Controller`. Kept apart so that either side can be
tested with a fake of the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast, get_args

from happy_launcher.errors import HappyError
from happy_launcher.protocol import Envelope

Mode = Literal["local", "remote"]
# What clients see: a headless run (`-p`, no terminal) drives Claude on happy's stdio, in neither mode.
ShownMode = Literal["local", "remote", "headless"]
SwitchOutcome = Literal["switched", "already-there"]  # what a `switch` did
AbortOutcome = Literal["aborted", "no-turn"]  # what an `abort` did
InputMode = Literal["inject", "switch"]  # how local mode takes a message (see SendRequest.mode)
MAX_MESSAGE = 1 << 20  # bytes of UTF-8: the largest message `send` takes (README, control-protocol.md)
# Claude's modes, as a message sets them.
PermissionMode = Literal["default", "acceptEdits", "bypassPermissions", "plan"]
# What a message may name: Claude's modes, and Happy's names for Codex's (mapped by `MessageMeta.of`).
MessagePermissionMode = Literal[PermissionMode, "read-only", "safe-yolo", "yolo"]
MESSAGE_PERMISSION_MODES: tuple[str, ...] = get_args(MessagePermissionMode)
MAX_MODEL = 200  # characters of a message's model name


def meta_problem(permission_mode: str | None, model: str | None) -> str | None:
    """Why a message's permission mode or model cannot be taken, in words; else None."""
    if permission_mode is not None and permission_mode not in MESSAGE_PERMISSION_MODES:
        return f"permission mode {permission_mode!r} is not one of {', '.join(MESSAGE_PERMISSION_MODES)}"
    if model is not None and not 0 < len(model) <= MAX_MODEL:
        return f"the model name must be 1 to {MAX_MODEL} characters (it is {len(model)})"
    return None


@dataclass(frozen=True, slots=True)
class MessageMeta:
    """What a message asks of Claude besides its text (Happy's `meta.permissionMode`, `meta.model`):
    remote mode applies them before sending it, and they hold after it; None: unchanged."""

    permission_mode: PermissionMode | None = None
    model: str | None = None

    @classmethod
    def of(cls, permission_mode: str | None, model: str | None) -> MessageMeta:
        """From a message's names (validated before: `MessagePermissionMode`)."""
        # As Happy's CLI maps them for Claude.
        happy = {"yolo": "bypassPermissions", "safe-yolo": "default", "read-only": "default"}
        mode = None if permission_mode is None else happy.get(permission_mode, permission_mode)
        return cls(cast(PermissionMode | None, mode), model)

    def __bool__(self) -> bool:
        return self.permission_mode is not None or self.model is not None


NO_META = MessageMeta()


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


class SessionOver(ControlRefused):
    """The session has ended while its socket still serves (its launcher is exiting): a client
    reads the rest from the store."""


@dataclass(frozen=True, slots=True)
class SessionFacts:
    happy_session_id: str | None  # None until Claude has named its session (first hook)
    claude_session_id: str | None
    mode: ShownMode
    cwd: str
    pid: int
    started_at: int  # ms since the epoch
    busy: bool  # a turn is running
    terminal: bool = True  # False: a run without a terminal (the spawner's): `happy attach` takes it


@dataclass(frozen=True, slots=True)
class Accepted:
    """An inbound message is stored (it will reach Claude exactly once); `duplicate`: its
    message id was seen before, and this is the first acceptance repeated."""

    message_seq: int
    duplicate: bool


Origin = Literal["remote", "local"]  # local: the TUI asked (its hook) and shows its own dialog too


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """A tool call waiting for permission, from any client (or the terminal): the broker's, the
    controller's, the remote screen's; the control socket's `Permission` is made from it."""

    id: str
    tool: str
    input: dict[str, Any]
    title: str  # by the mapper's title rules (the Bash command, the file path, …)
    tool_use_id: str | None = None
    origin: Origin = "remote"


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """How a request is settled: `allow`, or deny with `message` (Claude sees it); `stop` also
    interrupts the turn. A request settled by nobody's answer (withdrawn) has None instead."""

    allow: bool
    message: str = ""
    stop: bool = False
    updated_input: dict[str, Any] | None = None


Outcome = Literal["allowed", "denied", "withdrawn"]


def outcome(answer: PermissionAnswer | None) -> Outcome:
    """How a settlement is told to clients (None: withdrawn)."""
    return "withdrawn" if answer is None else "allowed" if answer.allow else "denied"


class PermissionListener(Protocol):
    def requested(self, request: PermissionRequest) -> None: ...

    def settled(self, request_id: str, answer: PermissionAnswer | None) -> None:
        """`answer` None: withdrawn (nobody's answer is wanted any more)."""
        ...


class CommitSubscriber(Protocol):
    """Told of every committed envelope with its seq, in seq order; must not block or raise."""

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None: ...


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

    async def send(
        self, message_id: str, text: str, mode: InputMode | None = None, meta: MessageMeta = NO_META
    ) -> Accepted:
        """Store a user message for Claude (idempotent on `message_id`) and have it delivered
        (`mode`: how local mode takes it; None: the session's default; `meta`: stored with it):
        returns once it is stored, before Claude has taken it."""
        ...

    async def switch(self, to: Mode) -> SwitchOutcome:
        """Move the session to the other front end; returns once the switch has started
        (`switched`), or at once when it is there already. ControlRefused when it cannot be done."""
        ...

    async def abort(self) -> AbortOutcome:
        """End the running turn `cancelled` (`aborted`); `no-turn` when idle (nothing done)."""
        ...

    def pending_permissions(self) -> list[PermissionRequest]: ...

    def answer(self, request_id: str, allow: bool, message: str | None) -> None:
        """Answer a pending permission request; ControlRefused if it is unknown or answered."""
        ...

    def watch_permissions(self, listener: PermissionListener) -> Callable[[], None]:
        """Tell `listener` of each request already pending (at once, in order), then of each new
        request and each settlement, until the returned function is called."""
        ...

    async def ask_permission(self, tool: str, tool_input: dict[str, Any]) -> PermissionAnswer | None:
        """The TUI's PermissionRequest hook asks: a pending request until the first answer, or
        until it is withdrawn (None; never a deny for want of an answer). Cancelled: withdrawn."""
        ...
