"""One client of the control socket (see control_server.py): a reader answering its requests
one after the other, in order, and a writer draining its outbox (`control_outbox.py`); the
session's callbacks only ever queue lines, so no client can slow the session. Nothing a client
sends can end the server: a bad line is an `error` reply, a failure of the session's side is an
`error` reply (and a log line)."""

from __future__ import annotations

import logging

import anyio
from anyio.abc import TaskGroup

from happy_launcher.control.framing import LineSplitter, WireError, encode, parse_request
from happy_launcher.control.link import Link, LinkClosed, ServerLimits, cancel_on
from happy_launcher.control.outbox import Outbox
from happy_launcher.control.sockets import peer_uid
from happy_launcher.control.subscription import Subscription
from happy_launcher.control.wire import (
    PROTOCOL_VERSION,
    AbortRequest,
    AcceptedReply,
    AnswerRequest,
    AskPermissionRequest,
    DecisionReply,
    ErrorReply,
    Facts,
    HelloReply,
    HelloRequest,
    OkReply,
    Permission,
    Reply,
    Request,
    SendRequest,
    StatusReply,
    StatusRequest,
    SubscribeRequest,
    SwitchRequest,
)
from happy_launcher.session.ports import Controller, ControlRefused, MessageMeta, SessionOver
from happy_launcher.version import __version__

_log = logging.getLogger(__name__)


async def serve_client(
    link: Link, controller: Controller, uid: int, limits: ServerLimits, stop: anyio.Event
) -> None:
    """Serve one client until it leaves, or until `stop` (then it gets what it is owed first)."""
    with link.socket:
        try:
            peer = peer_uid(link.socket)
            if peer != uid:
                _log.warning("control socket: refused a client of uid %d", peer)
                refusal = ErrorReply(
                    id=None, code="refused", message=f"uid {peer} may not control this session"
                )
                with anyio.move_on_after(limits.grace):
                    await link.send(encode(refusal))
                return
            await _Connection(controller, limits).run(link, stop)
        except (LinkClosed, OSError):
            pass  # the client went away
        except Exception:  # a bug of ours: this client is lost, the session must not be
            _log.exception("control socket: a client connection failed")


class _Connection:
    def __init__(self, controller: Controller, limits: ServerLimits) -> None:
        self._controller = controller
        self._limits = limits
        self._outbox = Outbox(limits.outbox, limits.grace)
        self._subscription: Subscription | None = None
        self._asks: set[anyio.CancelScope] = set()  # `permission` requests waiting for a decision
        self._reading = True

    async def run(self, link: Link, stop: anyio.Event) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write, link, tg.cancel_scope)
            try:
                with anyio.CancelScope() as reading:
                    tg.start_soon(cancel_on, stop, reading)
                    await self._read(link, tg)
            finally:
                self._reading = False
                for ask in self._asks:  # the asker is gone (the TUI's hook killed): withdrawn
                    ask.cancel()
                if self._subscription is not None:
                    self._subscription.stop()
            # The client closed its end, or the session ended: send what it is owed (boundedly),
            # then close.
            self._outbox.close()
            tg.cancel_scope.deadline = anyio.current_time() + self._limits.grace

    async def _write(self, link: Link, scope: anyio.CancelScope) -> None:
        try:
            await self._outbox.run(link)
        except LinkClosed:
            pass
        finally:
            scope.cancel()  # done (closed, dropped or gone): so is the reader

    async def _read(self, link: Link, tg: TaskGroup) -> None:
        splitter = LineSplitter(self._limits.max_line)
        while data := await link.receive():
            for line in splitter.feed(data):
                reply = await self._answer(line, tg)
                if reply is not None:
                    self._outbox.put(encode(reply))

    async def _answer(self, line: bytes | None, tg: TaskGroup) -> Reply | None:
        if line is None:
            message = (
                f"the request is larger than {self._limits.max_line} bytes (a message to send is at "
                "most 1 MiB): this line was skipped"
            )
            return ErrorReply(id=None, code="too-long", message=message)
        if not line.strip():
            return None  # a blank line (`nc` users): nothing asked
        try:
            request = parse_request(line)
        except WireError as exc:
            return exc.reply()
        try:
            return await self._dispatch(request, tg)
        except SessionOver as exc:
            return ErrorReply(id=request.id, code="ended", message=str(exc))
        except ControlRefused as exc:
            return ErrorReply(id=request.id, code="refused", message=str(exc))
        except Exception as exc:
            _log.exception("control request %s failed", request.type)
            message = f"the session failed to {request.type} ({exc}); see happy.log in HAPPY_HOME_DIR"
            return ErrorReply(id=request.id, code="failed", message=message)

    async def _dispatch(self, request: Request, tg: TaskGroup) -> Reply | None:
        controller = self._controller
        match request:
            case HelloRequest(versions=versions) if PROTOCOL_VERSION not in versions:
                message = f"this session speaks protocol version {PROTOCOL_VERSION}: upgrade happy"
                return ErrorReply(id=request.id, code="unsupported-version", message=message)
            case HelloRequest():
                facts = Facts.of(controller.facts())
                return HelloReply(
                    id=request.id, version=PROTOCOL_VERSION, happy_version=__version__, session=facts
                )
            case SubscribeRequest(after_seq=after_seq):
                return self._subscribe(request.id, after_seq, tg)
            case SendRequest(message_id=message_id, text=text, mode=mode):
                meta = MessageMeta.of(request.permission_mode, request.model)
                return AcceptedReply.of(request.id, await controller.send(message_id, text, mode, meta))
            case SwitchRequest(to=to):
                return OkReply(id=request.id, outcome=await controller.switch(to))
            case AbortRequest():
                return OkReply(id=request.id, outcome=await controller.abort())
            case AnswerRequest(request_id=request_id, allow=allow, message=message):
                controller.answer(request_id, allow, message)
            case AskPermissionRequest():
                tg.start_soon(self._ask, request)  # beside the reader, which sees the asker leave
                return None
            case StatusRequest():
                pending = [Permission.of(p) for p in controller.pending_permissions()]
                return StatusReply(id=request.id, session=Facts.of(controller.facts()), pending=pending)
        return OkReply(id=request.id)

    async def _ask(self, request: AskPermissionRequest) -> None:
        with anyio.CancelScope() as scope:
            if not self._reading:
                return  # the asker left before this task started
            self._asks.add(scope)
            try:
                payload = request.payload
                decision = await self._controller.ask_permission(payload.tool_name, payload.tool_input)
                reply: Reply = DecisionReply.of(request.id, decision)
            except ControlRefused as exc:
                reply = ErrorReply(id=request.id, code="refused", message=str(exc))
            except Exception as exc:
                _log.exception("a permission request failed")
                reply = ErrorReply(id=request.id, code="failed", message=f"the session failed to ask ({exc})")
            finally:
                self._asks.discard(scope)
            self._outbox.put(encode(reply))

    def _subscribe(self, request_id: str, after_seq: int | None, tg: TaskGroup) -> Reply | None:
        if self._subscription is not None:
            message = "this connection is already subscribed: open another one to subscribe again"
            return ErrorReply(id=request_id, code="bad-request", message=message)
        subscription = Subscription(self._controller, self._outbox, after_seq)
        subscription.start(ready=lambda: self._outbox.put(encode(OkReply(id=request_id))))
        self._subscription = subscription
        tg.start_soon(subscription.catch_up)
        return None
