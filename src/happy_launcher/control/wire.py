"""The control socket's wire protocol, version 1 (docs/control-protocol.md): one JSON object per
line. Clients send requests carrying an `id` of their choosing, echoed in the reply; the server
also sends events (no `id`) to a subscribed client. Every line is one of the models below; the
doc's JSON Schemas are generated from them (`scripts/gen_control_doc.py`), and a test keeps the
two in step.

Parsing never raises anything but `WireError`, which the server turns into an `error` reply."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt

from happy_launcher.protocol.wire import Envelope
from happy_launcher.session.ports import (
    MAX_MODEL,
    Accepted,
    MessagePermissionMode,
    PermissionAnswer,
    PermissionRequest,
    SessionFacts,
    outcome,
)

PROTOCOL_VERSION = 1

RequestId = Annotated[str, Field(min_length=1, max_length=200)]
ErrorCode = Literal[
    "bad-json", "bad-request", "too-long", "unsupported-version", "refused", "ended", "failed"
]


class WireLine(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


# --- shared shapes ------------------------------------------------------------------------------


class Facts(WireLine):
    """The session, as `hello` and `status` describe it."""

    happy_session_id: str | None = Field(description="null until Claude has named its session")
    claude_session_id: str | None
    mode: Literal["local", "remote", "headless"] = Field(
        description="headless: Claude runs on happy's stdio (`-p`, no terminal): watched, not driven"
    )
    cwd: str
    pid: int
    started_at: int = Field(description="ms since the epoch")
    busy: bool = Field(description="a turn is running")
    terminal: bool = Field(
        default=True, description="false: the run has no terminal (started detached): `happy attach` takes it"
    )

    @classmethod
    def of(cls, facts: SessionFacts) -> Facts:
        return cls(
            happy_session_id=facts.happy_session_id,
            claude_session_id=facts.claude_session_id,
            mode=facts.mode,
            cwd=facts.cwd,
            pid=facts.pid,
            started_at=facts.started_at,
            busy=facts.busy,
            terminal=facts.terminal,
        )


class Permission(WireLine):
    """A permission request waiting for an answer (from any client, or the terminal)."""

    id: str
    tool: str
    input: dict[str, Any]
    title: str
    origin: Literal["remote", "local"] = Field(
        default="remote",
        description="local: the TUI asked, and shows its own dialog too (the first answer wins, "
        "there or from a client); remote: remote mode asked",
    )

    @classmethod
    def of(cls, request: PermissionRequest) -> Permission:
        return cls(
            id=request.id, tool=request.tool, input=request.input, title=request.title, origin=request.origin
        )

    def request(self) -> PermissionRequest:
        return PermissionRequest(self.id, self.tool, self.input, self.title, origin=self.origin)


# --- requests (client -> server) ----------------------------------------------------------------


class HelloRequest(WireLine):
    type: Literal["hello"]
    id: RequestId
    versions: list[PositiveInt] = Field(min_length=1, description="protocol versions the client speaks")


class SubscribeRequest(WireLine):
    type: Literal["subscribe"]
    id: RequestId
    after_seq: NonNegativeInt | None = Field(
        description="envelopes with a greater seq (0: the whole history); null: only those committed from now"
    )


class SendRequest(WireLine):
    type: Literal["send"]
    id: RequestId
    message_id: str = Field(min_length=1, max_length=200, description="the client's id; a resend is a no-op")
    text: str = Field(min_length=1, description="at most 1 MiB of UTF-8 (else `refused`)")
    mode: Literal["inject", "switch"] | None = Field(
        default=None,
        description=(
            "how local mode (the TUI) takes it: `switch` hands the session to remote mode, which "
            "sends it; `inject` types it into the live TUI (once no dialog is open, the user's draft "
            "stashed and given back), confirmed by Claude's UserPromptSubmit hook within 5 s, else "
            "a service envelope says it was not; null: the session's default "
            "(`happy claude --happy-remote-input`). In remote mode both are a plain send; a "
            "watch-only session refuses both. The reply comes once the message is stored"
        ),
    )
    permission_mode: MessagePermissionMode | None = Field(
        default=None,
        description=(
            "Claude's permission mode from this message on (Happy's `meta.permissionMode`; Happy's "
            "`yolo` is bypassPermissions, `safe-yolo` and `read-only` are default). Remote mode "
            "applies it before sending the message; the TUI keeps its own (a service envelope says "
            "so). Stored with the message; null: unchanged"
        ),
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MODEL,
        description="Claude's model (a name or an alias) from this message on (Happy's `meta.model`), "
        "as `permission_mode` is; null: unchanged",
    )


class SwitchRequest(WireLine):
    type: Literal["switch"]
    id: RequestId
    to: Literal["local", "remote"]


class AbortRequest(WireLine):
    type: Literal["abort"]
    id: RequestId


class AnswerRequest(WireLine):
    type: Literal["answer"]
    id: RequestId
    request_id: str = Field(description="the permission request's id")
    allow: bool
    message: str | None = Field(default=None, description="why, when denying (Claude sees it)")


class StatusRequest(WireLine):
    type: Literal["status"]
    id: RequestId


class HookPayload(BaseModel):
    """Claude's PermissionRequest hook payload, as Claude wrote it: `tool_name` and `tool_input`
    are read, any other key (session_id, cwd, permission_suggestions, …) is ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    tool_name: str = Field(min_length=1)
    tool_input: dict[str, Any]


class AskPermissionRequest(WireLine):
    """Sent by happy's PermissionRequest hook in the TUI (any client may ask the same): a pending
    request (`origin` local) until the first answer from any client, or until it is withdrawn: the
    user answered in the TUI (the tool call ended), the turn ended, or this connection closed. The
    reply (`decision`) comes then; other requests on this connection do not wait for it."""

    type: Literal["permission"]
    id: RequestId
    payload: HookPayload


AnyRequest = (
    HelloRequest
    | SubscribeRequest
    | SendRequest
    | SwitchRequest
    | AbortRequest
    | AnswerRequest
    | StatusRequest
    | AskPermissionRequest
)
Request = Annotated[AnyRequest, Field(discriminator="type")]

# --- replies (server -> client, echoing the request's id) ----------------------------------------


class HelloReply(WireLine):
    type: Literal["hello"] = "hello"
    id: str
    version: int = Field(description="the protocol version of this connection")
    happy_version: str
    session: Facts


class OkReply(WireLine):
    """`subscribe`, `switch`, `abort`, `answer` done (a switch: started)."""

    type: Literal["ok"] = "ok"
    id: str
    outcome: Literal["switched", "already-there", "aborted", "no-turn"] | None = Field(
        default=None,
        description="what a `switch` or an `abort` did: `switched` (the switch has started), "
        "`already-there` (the session is in that mode: nothing done), `aborted` (the running turn "
        "ends `cancelled`), `no-turn` (no turn was running: nothing done); null for the others",
    )


class AcceptedReply(WireLine):
    type: Literal["accepted"] = "accepted"
    id: str
    message_seq: PositiveInt = Field(description="the message's seq among the session's inbound messages")
    duplicate: bool = Field(description="this message id was accepted before; nothing new was stored")

    @classmethod
    def of(cls, request_id: str, accepted: Accepted) -> AcceptedReply:
        return cls(id=request_id, message_seq=accepted.message_seq, duplicate=accepted.duplicate)


class StatusReply(WireLine):
    type: Literal["status"] = "status"
    id: str
    session: Facts
    pending: list[Permission] = Field(description="permission requests waiting for an answer")


class DecisionReply(WireLine):
    """How a `permission` request was settled. `withdrawn`: no client decided (the TUI's dialog
    does); `message`: why it was denied (Claude shows it); `interrupt`: stop the turn too."""

    type: Literal["decision"] = "decision"
    id: str
    outcome: Literal["allowed", "denied", "withdrawn"]
    message: str | None = None
    interrupt: bool = False

    @classmethod
    def of(cls, request_id: str, answer: PermissionAnswer | None) -> DecisionReply:
        """`answer` None: withdrawn."""
        if answer is None or answer.allow:
            return cls(id=request_id, outcome=outcome(answer))
        return cls(id=request_id, outcome="denied", message=answer.message or None, interrupt=answer.stop)


class ErrorReply(WireLine):
    type: Literal["error"] = "error"
    id: str | None = Field(description="the request's id; null when the line had none that could be read")
    code: ErrorCode
    message: str


# --- events (server -> a subscribed client) -------------------------------------------------------


class EnvelopeEvent(WireLine):
    """An envelope, exactly as stored, with its per-session seq (strictly increasing)."""

    type: Literal["envelope"] = "envelope"
    seq: PositiveInt
    envelope: Envelope


class PermissionRequested(WireLine):
    type: Literal["permission-requested"] = "permission-requested"
    request: Permission


class PermissionSettled(WireLine):
    type: Literal["permission-settled"] = "permission-settled"
    request_id: str
    outcome: Literal["allowed", "denied", "withdrawn"]

    @classmethod
    def of(cls, request_id: str, answer: PermissionAnswer | None) -> PermissionSettled:
        return cls(request_id=request_id, outcome=outcome(answer))


class Dropped(WireLine):
    """The client read too slowly: what was queued for it is discarded and the connection closes
    after this line. Subscribe again (a new connection) after the last seq received: nothing is lost."""

    type: Literal["dropped"] = "dropped"
    message: str


Reply = HelloReply | OkReply | AcceptedReply | StatusReply | DecisionReply | ErrorReply
Event = EnvelopeEvent | PermissionRequested | PermissionSettled | Dropped

REQUESTS: tuple[type[WireLine], ...] = (
    HelloRequest,
    SubscribeRequest,
    SendRequest,
    SwitchRequest,
    AbortRequest,
    AnswerRequest,
    StatusRequest,
    AskPermissionRequest,
)
REPLIES: tuple[type[WireLine], ...] = (
    HelloReply,
    OkReply,
    AcceptedReply,
    StatusReply,
    DecisionReply,
    ErrorReply,
)
EVENTS: tuple[type[WireLine], ...] = (EnvelopeEvent, PermissionRequested, PermissionSettled, Dropped)
