"""A client of a session's control socket (docs/control-protocol.md), for the CLI verbs and
tests: connect, request and reply, then the events of a subscription."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

import anyio

from happy_launcher.control.framing import (
    LineSplitter,
    WireError,
    encode,
    parse_server_line,
    split_envelope_line,
)
from happy_launcher.control.link import Link, LinkClosed
from happy_launcher.control.link import connect as connect_link
from happy_launcher.control.sockets import short_path
from happy_launcher.control.wire import (
    PROTOCOL_VERSION,
    AbortRequest,
    AcceptedReply,
    AnswerRequest,
    AnyRequest,
    ErrorReply,
    Event,
    HelloReply,
    HelloRequest,
    OkReply,
    Reply,
    SendRequest,
    StatusReply,
    StatusRequest,
    SubscribeRequest,
    SwitchRequest,
)
from happy_launcher.errors import (
    ControlError,
    ControlProtocolError,
    MessageTooLargeError,
    RequestRefusedError,
    SessionEndedError,
    UsageError,
)
from happy_launcher.session.ports import (
    InputMode,
    MessagePermissionMode,
    Mode,
    message_too_large,
    meta_problem,
)

MAX_SERVER_LINE = 256 << 20  # an envelope carries a whole tool result: allow for big ones
CONNECT_TIMEOUT = 5.0
_R = TypeVar("_R", bound=Reply)


@dataclass(frozen=True, slots=True)
class EnvelopeBytes:
    """An `envelope` event, unparsed: the envelope's JSON exactly as the store holds it."""

    seq: int
    body: bytes


ClientEvent = EnvelopeBytes | Event


@asynccontextmanager
async def connect(path: Path, *, within: float = CONNECT_TIMEOUT) -> AsyncIterator[ControlClient]:
    """A connection to the control socket at `path`; errors say whether the session is gone."""
    try:
        with anyio.fail_after(within), short_path(path) as address:
            link = await connect_link(address)
    except (FileNotFoundError, ConnectionRefusedError):
        raise SessionEndedError(
            f"the session of {path.name} has ended (nothing listens on its socket)"
        ) from None
    except PermissionError:
        raise RequestRefusedError(f"cannot connect to {path}: it belongs to another user") from None
    except TimeoutError:
        raise ControlError(f"the session at {path} did not accept a connection within {within} s") from None
    except OSError as exc:
        raise ControlError(f"cannot connect to {path} ({exc.strerror or exc})") from None
    with link.socket:
        yield ControlClient(link)


class ControlClient:
    def __init__(self, link: Link) -> None:
        self._link = link
        self._splitter = LineSplitter(MAX_SERVER_LINE)
        self._lines: deque[bytes | None] = deque()
        self._events: deque[ClientEvent] = deque()
        self._ids = itertools.count(1)

    def _next_id(self) -> str:
        return str(next(self._ids))

    async def _line(self) -> bytes | None:
        """The server's next line; None at the end of the connection."""
        while not self._lines:
            try:
                data = await self._link.receive()
            except LinkClosed:
                return None
            if not data:
                return None
            self._lines.extend(self._splitter.feed(data))
        line = self._lines.popleft()
        if line is None:
            raise ControlProtocolError(f"the session sent a line longer than {MAX_SERVER_LINE} bytes")
        return line

    async def _item(self) -> ClientEvent | Reply | None:
        line = await self._line()
        if line is None:
            return None
        envelope = split_envelope_line(line)
        if envelope is not None:
            return EnvelopeBytes(*envelope)
        try:
            return parse_server_line(line)
        except WireError as exc:
            raise ControlProtocolError(
                f"the session sent a line that is not protocol: {exc.message}"
            ) from None

    async def request(self, request: AnyRequest) -> Reply:
        """Send `request` and return its reply (events that come first are kept for `events`);
        an `error` reply raises: RequestRefusedError for a refusal, SessionEndedError when the
        session has ended meanwhile, else ControlProtocolError."""
        try:
            await self._link.send(encode(request))
        except LinkClosed:
            raise SessionEndedError("the session closed the connection: it has ended") from None
        while True:
            item = await self._item()
            if item is None:
                raise SessionEndedError("the session closed the connection before answering: it has ended")
            if isinstance(item, ErrorReply) and item.id in (request.id, None):
                if item.code == "refused":
                    raise RequestRefusedError(item.message)
                if item.code == "ended":
                    raise SessionEndedError(item.message)
                raise ControlProtocolError(f"the session rejected the request ({item.code}): {item.message}")
            if isinstance(item, EnvelopeBytes | Event):
                self._events.append(item)
            elif item.id == request.id:
                return item

    async def hello(self) -> HelloReply:
        reply = await self.request(
            HelloRequest(type="hello", id=self._next_id(), versions=[PROTOCOL_VERSION])
        )
        return _expect(reply, HelloReply)

    async def status(self) -> StatusReply:
        return _expect(await self.request(StatusRequest(type="status", id=self._next_id())), StatusReply)

    async def send(
        self,
        message_id: str,
        text: str,
        mode: InputMode | None = None,
        *,
        permission_mode: str | None = None,
        model: str | None = None,
    ) -> AcceptedReply:
        """Before anything is sent: MessageTooLargeError for a message over 1 MiB, UsageError for
        a `permission_mode` not in MESSAGE_PERMISSION_MODES or a `model` not 1-200 characters."""
        if (too_large := message_too_large(text)) is not None:
            raise MessageTooLargeError(too_large)
        if (bad := meta_problem(permission_mode, model)) is not None:
            raise UsageError(bad)
        request = SendRequest(
            type="send",
            id=self._next_id(),
            message_id=message_id,
            text=text,
            mode=mode,
            permission_mode=cast(MessagePermissionMode | None, permission_mode),
            model=model,
        )
        return _expect(await self.request(request), AcceptedReply)

    async def switch(self, to: Mode) -> OkReply:
        """Its `outcome`: `switched` or `already-there` (None from an older happy)."""
        return _expect(await self.request(SwitchRequest(type="switch", id=self._next_id(), to=to)), OkReply)

    async def abort(self) -> OkReply:
        """Its `outcome`: `aborted` or `no-turn` (None from an older happy)."""
        return _expect(await self.request(AbortRequest(type="abort", id=self._next_id())), OkReply)

    async def answer(self, request_id: str, allow: bool, message: str | None = None) -> None:
        await self.request(
            AnswerRequest(
                type="answer", id=self._next_id(), request_id=request_id, allow=allow, message=message
            )
        )

    async def subscribe(self, after_seq: int | None) -> None:
        await self.request(SubscribeRequest(type="subscribe", id=self._next_id(), after_seq=after_seq))

    async def events(self) -> AsyncIterator[ClientEvent]:
        """The subscription's events until the connection ends."""
        while True:
            while self._events:
                yield self._events.popleft()
            item = await self._item()
            if item is None:
                return
            if isinstance(item, EnvelopeBytes | Event):
                yield item


def _expect(reply: Reply, kind: type[_R]) -> _R:
    if not isinstance(reply, kind):
        raise ControlProtocolError(f"the session answered {reply.type!r} where {kind.__name__} was due")
    return reply
