"""A scripted fake of the Anthropic Messages API, for running the real Claude Code CLI offline.

Stdlib only: a ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) served from a daemon thread, so the same
object works from sync pytest fixtures, async tests and scripts::

    script = Script(
        [
            Rule(prompt="run it", reply=Reply([Text("Running."), ToolUse("Bash", {"command": "echo hi"})])),
            Rule(tool_result="Bash", reply=Reply([Text("Done.")])),
        ],
        fallback=Reply([Text("OK")]),
    )
    with FakeAnthropic(script) as fake:
        env = {"ANTHROPIC_BASE_URL": fake.url, ...}
        ...
        fake.wait_for_requests(2, timeout=10)

``POST /v1/messages`` (with or without ``?beta=true``) answers with Server-Sent Events when the body asks
for ``"stream": true`` and with a JSON message otherwise. Every request is recorded (see
:class:`RecordedRequest`); :meth:`FakeAnthropic.wait_for_requests` / :meth:`FakeAnthropic.wait_until`
block on a condition variable (no polling) with a timeout.

Rules are tried in order; the first whose conditions all hold (and whose ``tool_use`` blocks name tools
offered in the request's ``tools``) answers. Conditions look at the LAST user message (its text without
``<system-reminder>`` blocks, and its ``tool_result`` blocks) and at the FIRST user message (a subagent's
conversation starts with the ``Agent`` prompt).
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import string
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias
from urllib.parse import urlsplit

__all__ = [
    "Block",
    "ErrorReply",
    "FakeAnthropic",
    "RecordedRequest",
    "Reply",
    "ReplyLike",
    "Rule",
    "Script",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "new_message_id",
    "new_tool_use_id",
]

JSON: TypeAlias = Any
StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"]

_ALNUM = string.ascii_letters + string.digits
_DEFAULT_MODEL = "claude-fake-1"
SYSTEM_REMINDER = "<system-reminder>"


def _random_suffix(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_ALNUM) for _ in range(n))


def new_tool_use_id(rng: random.Random | None = None) -> str:
    """A tool_use id shaped like a real one: ``toolu_`` + 24 alphanumerics (``toolu_01…``)."""
    return "toolu_01" + _random_suffix(rng or random.SystemRandom(), 22)


def new_message_id(rng: random.Random | None = None) -> str:
    """A message id shaped like a real one: ``msg_01`` + 22 alphanumerics."""
    return "msg_01" + _random_suffix(rng or random.SystemRandom(), 22)


# --------------------------------------------------------------------------------------------------
# Scripted replies


@dataclass(frozen=True)
class Text:
    """A text content block, streamed as ``text_delta`` chunks of ``chunk_size`` characters."""

    text: str
    chunk_size: int | None = None
    chunk_delay: float | None = None  # overrides Reply.chunk_delay for this block


@dataclass(frozen=True)
class Thinking:
    """A thinking block: ``thinking_delta`` chunks, then one ``signature_delta``."""

    thinking: str
    signature: str | None = None  # a fake opaque signature is made up when None
    chunk_size: int | None = None
    chunk_delay: float | None = None


@dataclass(frozen=True)
class ToolUse:
    """A tool_use block; ``input`` is streamed as ``input_json_delta`` chunks. ``id`` is generated if None."""

    name: str
    input: Mapping[str, JSON] = field(default_factory=dict)
    id: str | None = None
    chunk_size: int | None = None
    chunk_delay: float | None = None


Block: TypeAlias = Text | Thinking | ToolUse


@dataclass(frozen=True)
class Reply:
    """One assistant message.

    ``stop_reason`` defaults to ``tool_use`` when a block is a :class:`ToolUse`, else ``end_turn``.
    Delays (seconds) are waited inside the server thread: ``delay`` before the response starts,
    ``block_delay`` before each content block, ``chunk_delay`` before each delta chunk.
    """

    blocks: Sequence[Block] = ()
    stop_reason: StopReason | None = None
    model: str | None = None  # default: the request's model
    delay: float = 0.0
    block_delay: float = 0.0
    chunk_delay: float = 0.0
    chunk_size: int = 24
    usage: Mapping[str, int] | None = None  # overrides the made-up usage numbers

    def effective_stop_reason(self) -> StopReason:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error answer with the API's JSON error body."""

    status: int = 529
    message: str = "Overloaded"
    error_type: str | None = None  # derived from status when None
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, JSON]:
        etype = self.error_type or _ERROR_TYPES.get(self.status, "api_error")
        return {"type": "error", "error": {"type": etype, "message": self.message}}


Answer: TypeAlias = Reply | ErrorReply
ReplyLike: TypeAlias = Reply | ErrorReply | Callable[["RecordedRequest"], Reply | ErrorReply]


# --------------------------------------------------------------------------------------------------
# Request views


@dataclass(frozen=True)
class ToolResult:
    """A ``tool_result`` block found in a user message."""

    tool_use_id: str
    tool_name: str | None  # from the matching tool_use block of an earlier assistant message
    content: str  # text content, joined
    is_error: bool


def _block_texts(content: JSON) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                out.append(block["text"])
    return out


def _user_text(message: Mapping[str, JSON]) -> str:
    texts = [t for t in _block_texts(message.get("content")) if not t.lstrip().startswith(SYSTEM_REMINDER)]
    return "\n".join(t.strip() for t in texts if t.strip())


@dataclass
class RecordedRequest:
    """One HTTP request the fake received, plus what it answered (updated while streaming)."""

    index: int
    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]
    body: JSON  # parsed JSON (None if the body was not JSON)
    received_at: float
    # Filled in by the server:
    rule: str | None = None  # name of the rule that answered; "fallback"; None when not a messages call
    answer: Answer | None = None
    message_id: str | None = None
    tool_use_ids: list[str] = field(default_factory=list)
    events_sent: int = 0  # SSE events written so far
    completed: bool = False  # the whole answer was written
    disconnected: bool = False  # the client went away mid-answer

    # -- views on the body --------------------------------------------------------------------------
    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path == "/v1/messages"

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))

    @property
    def model(self) -> str | None:
        m = self.body.get("model") if isinstance(self.body, dict) else None
        return m if isinstance(m, str) else None

    @property
    def messages(self) -> list[dict[str, JSON]]:
        msgs = self.body.get("messages") if isinstance(self.body, dict) else None
        return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []

    @property
    def user_messages(self) -> list[dict[str, JSON]]:
        return [m for m in self.messages if m.get("role") == "user"]

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        if not isinstance(tools, list):
            return []
        return [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]

    @property
    def system_text(self) -> str:
        system = self.body.get("system") if isinstance(self.body, dict) else None
        return "\n".join(_block_texts(system))

    @property
    def last_user_text(self) -> str:
        """The last user message's text blocks without ``<system-reminder>`` ones, stripped and joined."""
        users = self.user_messages
        return _user_text(users[-1]) if users else ""

    @property
    def last_user_raw_text(self) -> str:
        """All text blocks of the last user message, ``<system-reminder>`` ones included (a background
        agent's ``<task-notification>`` arrives wrapped in a system reminder)."""
        users = self.user_messages
        return "\n".join(_block_texts(users[-1].get("content"))) if users else ""

    @property
    def first_user_text(self) -> str:
        """The first user message's non-reminder text (for a subagent: its ``Agent`` prompt)."""
        users = self.user_messages
        return _user_text(users[0]) if users else ""

    def _tool_use_names(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for m in self.messages:
            if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
                continue
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    names[str(b.get("id"))] = str(b.get("name"))
        return names

    @property
    def tool_results(self) -> list[ToolResult]:
        """The ``tool_result`` blocks of the LAST user message."""
        users = self.user_messages
        if not users or not isinstance(users[-1].get("content"), list):
            return []
        names = self._tool_use_names()
        out: list[ToolResult] = []
        for b in users[-1]["content"]:
            if not isinstance(b, dict) or b.get("type") != "tool_result":
                continue
            tid = str(b.get("tool_use_id"))
            out.append(
                ToolResult(
                    tool_use_id=tid,
                    tool_name=names.get(tid),
                    content="\n".join(_block_texts(b.get("content"))),
                    is_error=bool(b.get("is_error")),
                )
            )
        return out


# --------------------------------------------------------------------------------------------------
# Rules


@dataclass
class Rule:
    """Answer ``reply`` when every given condition holds (no condition: always).

    - ``prompt``: substring of the last user message's non-reminder text.
    - ``exact``: equal to that text (stripped).
    - ``raw_prompt``: substring of the last user message's text INCLUDING ``<system-reminder>`` blocks
      (e.g. ``"<task-notification>"``: Claude sends a background agent's completion that way).
    - ``first_prompt``: substring of the FIRST user message's text (a subagent's prompt).
    - ``tool_result``: the last user message carries a tool_result for a tool_use of this tool name.
    - ``tool_use_id``: ... for this tool_use id.
    - ``when``: any predicate.
    - ``times``: answer at most this many times (then the rule is skipped).
    """

    reply: ReplyLike
    prompt: str | None = None
    exact: str | None = None
    raw_prompt: str | None = None
    first_prompt: str | None = None
    tool_result: str | None = None
    tool_use_id: str | None = None
    when: Callable[[RecordedRequest], bool] | None = None
    times: int | None = None
    name: str = ""
    used: int = 0

    def matches(self, req: RecordedRequest) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        last = req.last_user_text
        if self.prompt is not None and self.prompt not in last:
            return False
        if self.exact is not None and self.exact.strip() != last:
            return False
        if self.raw_prompt is not None and self.raw_prompt not in req.last_user_raw_text:
            return False
        if self.first_prompt is not None and self.first_prompt not in req.first_user_text:
            return False
        if self.tool_result is not None or self.tool_use_id is not None:
            results = req.tool_results
            if self.tool_result is not None and not any(r.tool_name == self.tool_result for r in results):
                return False
            if self.tool_use_id is not None and not any(r.tool_use_id == self.tool_use_id for r in results):
                return False
        return self.when is None or self.when(req)


def _unoffered_tools(answer: Answer, req: RecordedRequest) -> list[str]:
    if not isinstance(answer, Reply):
        return []
    offered = set(req.tool_names)
    return [b.name for b in answer.blocks if isinstance(b, ToolUse) and b.name not in offered]


class Script:
    """An ordered rule table plus a fallback reply. Thread-safe."""

    def __init__(self, rules: Iterable[Rule] = (), fallback: ReplyLike | None = None) -> None:
        self.rules: list[Rule] = list(rules)
        self.fallback: ReplyLike = fallback if fallback is not None else Reply([Text("OK")])
        self._lock = threading.Lock()

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def on(self, reply: ReplyLike, **conditions: Any) -> Rule:
        """Shorthand for ``add(Rule(reply, **conditions))``."""
        return self.add(Rule(reply, **conditions))

    def choose(self, req: RecordedRequest) -> tuple[str, Answer]:
        """Pick the answer for ``req``: (rule name, answer). Consumes one use of the rule."""
        with self._lock:
            for i, rule in enumerate(self.rules):
                if not rule.matches(req):
                    continue
                answer = rule.reply(req) if callable(rule.reply) else rule.reply
                if _unoffered_tools(answer, req):
                    continue  # a tool the request does not offer: let a later rule answer
                rule.used += 1
                return rule.name or f"rule[{i}]", answer
            answer = self.fallback(req) if callable(self.fallback) else self.fallback
        missing = _unoffered_tools(answer, req)
        if missing:
            answer = Reply([Text(f"[fake_anthropic: tool(s) {', '.join(missing)} not offered]")])
        return "fallback", answer


# --------------------------------------------------------------------------------------------------
# Wire format


def _chunks(s: str, size: int) -> Iterator[str]:
    size = max(1, size)
    if not s:
        yield ""
        return
    for i in range(0, len(s), size):
        yield s[i : i + size]


def _estimate_tokens(n_chars: int) -> int:
    return max(1, n_chars // 4)


def _block_json(block: Block, tool_id: str | None, signature: str) -> dict[str, JSON]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.thinking, "signature": signature}
    return {"type": "tool_use", "id": tool_id, "name": block.name, "input": dict(block.input)}


def _fake_signature(rng: random.Random) -> str:
    return "EqQBCkYIBxgCKkB" + _random_suffix(rng, 64)


class _Aborted(Exception):
    """The client disconnected or the server is closing."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: FakeAnthropic

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(target=self.process_request_thread, args=(request, client_address), daemon=True)
        self.owner._track(t, request)
        t.start()

    def shutdown_request(self, request: Any) -> None:
        self.owner._untrack(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-stream is normal (interrupts); keep test output clean


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 60  # idle keep-alive connections

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing -------------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, obj: JSON, extra: Mapping[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_" + _random_suffix(random.SystemRandom(), 24))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _record(self, method: str) -> RecordedRequest:
        raw = self._read_body()
        try:
            body: JSON = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(self.path)
        return self.server.owner._record(
            method=method,
            path=parts.path,
            query=parts.query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )

    # -- verbs ----------------------------------------------------------------------------------
    def do_GET(self) -> None:
        req = self._record("GET")
        self._send_json(404, ErrorReply(404, f"Not found: {req.path}").body())

    def do_POST(self) -> None:
        req = self._record("POST")
        if req.path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": _estimate_tokens(len(json.dumps(req.body)))})
            return
        if req.path != "/v1/messages":
            self._send_json(404, ErrorReply(404, f"Not found: {req.path}").body())
            return
        if not isinstance(req.body, dict):
            self._send_json(400, ErrorReply(400, "Body must be a JSON object").body())
            return
        owner = self.server.owner
        rule_name, answer = owner.script.choose(req)
        owner._update(req, rule=rule_name, answer=answer)
        try:
            if isinstance(answer, ErrorReply):
                owner._wait(answer.delay)
                self._send_json(answer.status, answer.body(), answer.headers)
                owner._update(req, completed=True)
            elif req.stream:
                self._stream(req, answer)
            else:
                self._send_json(200, owner._message_json(req, answer))
                owner._update(req, completed=True)
        except (_Aborted, OSError):
            owner._update(req, disconnected=True)
            self.close_connection = True

    def _stream(self, req: RecordedRequest, reply: Reply) -> None:
        owner = self.server.owner
        owner._wait(reply.delay)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", "req_" + _random_suffix(random.SystemRandom(), 24))
        self.end_headers()
        for event, data in owner._events(req, reply):
            if isinstance(event, float):
                owner._wait(event)
                continue
            payload = f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()
            owner._update(req, event_sent=True)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        owner._update(req, completed=True)


# --------------------------------------------------------------------------------------------------
# The server


class FakeAnthropic:
    """The fake Messages API. Starts serving on construction; ``close()`` (or ``with``) stops it."""

    def __init__(
        self, script: Script | None = None, *, seed: int | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.script = script if script is not None else Script()
        self._rng = random.Random(seed) if seed is not None else random.Random()
        self._cond = threading.Condition()
        self._all: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._threads: dict[threading.Thread, socket.socket] = {}
        self._server = _Server((host, 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic"
        )
        self._thread.daemon = True
        self._thread.start()
        self._closed = False

    # -- public API -----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def url(self) -> str:
        """Base URL for ``ANTHROPIC_BASE_URL`` (no trailing slash)."""
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """``POST /v1/messages`` requests so far, in arrival order (a snapshot list)."""
        with self._cond:
            return [r for r in self._all if r.is_messages]

    @property
    def all_requests(self) -> list[RecordedRequest]:
        """Every request (any method and path)."""
        with self._cond:
            return list(self._all)

    def wait_until(
        self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 10.0
    ) -> list[RecordedRequest]:
        """Block until ``predicate(self.requests)`` holds (re-checked on every request/stream event)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                reqs = [r for r in self._all if r.is_messages]
                if predicate(reqs):
                    return reqs
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"fake_anthropic: condition not met within {timeout}s ({len(reqs)} request(s))"
                    )
                self._cond.wait(left)

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least ``n`` messages requests arrived; returns them."""
        return self.wait_until(lambda reqs: len(reqs) >= n, timeout)

    def wait_for_completed(self, n: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least ``n`` messages requests were fully answered (or hung up on)."""
        return self.wait_until(lambda reqs: sum(r.completed or r.disconnected for r in reqs) >= n, timeout)

    def close(self, timeout: float = 2.0) -> None:
        """Stop serving, hang up open connections and join the threads (bounded by ``timeout``)."""
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        with self._cond:
            threads = dict(self._threads)
            self._cond.notify_all()
        for sock in threads.values():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        self._thread.join(max(0.0, deadline - time.monotonic()))
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- internals used by the handler ----------------------------------------------------------
    def _track(self, thread: threading.Thread, sock: socket.socket) -> None:
        with self._cond:
            self._threads[thread] = sock

    def _untrack(self, sock: socket.socket) -> None:
        with self._cond:
            for t, s in list(self._threads.items()):
                if s is sock:
                    del self._threads[t]

    def _record(
        self, *, method: str, path: str, query: str, headers: dict[str, str], body: JSON
    ) -> RecordedRequest:
        with self._cond:
            req = RecordedRequest(
                index=len(self._all),
                method=method,
                path=path,
                query=query,
                headers=headers,
                body=body,
                received_at=time.time(),
            )
            self._all.append(req)
            self._cond.notify_all()
            return req

    def _update(
        self,
        req: RecordedRequest,
        *,
        rule: str | None = None,
        answer: Answer | None = None,
        event_sent: bool = False,
        completed: bool = False,
        disconnected: bool = False,
    ) -> None:
        with self._cond:
            if rule is not None:
                req.rule = rule
            if answer is not None:
                req.answer = answer
            if event_sent:
                req.events_sent += 1
            if completed:
                req.completed = True
            if disconnected:
                req.disconnected = True
            self._cond.notify_all()

    def _wait(self, seconds: float) -> None:
        if self._stopping.is_set() or (seconds > 0 and self._stopping.wait(seconds)):
            raise _Aborted

    def _ids(self, req: RecordedRequest, reply: Reply) -> tuple[str, list[str | None], list[str]]:
        with self._cond:
            msg_id = new_message_id(self._rng)
            tool_ids: list[str | None] = []
            sigs: list[str] = []
            for b in reply.blocks:
                tool_ids.append((b.id or new_tool_use_id(self._rng)) if isinstance(b, ToolUse) else None)
                sigs.append((b.signature or _fake_signature(self._rng)) if isinstance(b, Thinking) else "")
            req.message_id = msg_id
            req.tool_use_ids = [t for t in tool_ids if t is not None]
        return msg_id, tool_ids, sigs

    def _usage(self, req: RecordedRequest, reply: Reply) -> dict[str, int]:
        out_chars = 0
        for b in reply.blocks:
            out_chars += len(b.text if isinstance(b, Text) else b.thinking if isinstance(b, Thinking) else "")
            if isinstance(b, ToolUse):
                out_chars += len(json.dumps(dict(b.input)))
        usage = {
            "input_tokens": _estimate_tokens(len(json.dumps(req.body))),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": _estimate_tokens(out_chars),
        }
        usage.update(reply.usage or {})
        return usage

    def _message_json(self, req: RecordedRequest, reply: Reply) -> dict[str, JSON]:
        msg_id, tool_ids, sigs = self._ids(req, reply)
        return {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": reply.model or req.model or _DEFAULT_MODEL,
            "content": [_block_json(b, t, s) for b, t, s in zip(reply.blocks, tool_ids, sigs, strict=True)],
            "stop_reason": reply.effective_stop_reason(),
            "stop_sequence": None,
            "usage": self._usage(req, reply),
        }

    def _events(self, req: RecordedRequest, reply: Reply) -> Iterator[tuple[str | float, JSON]]:
        """SSE (event, data) pairs; a float "event" is a delay to wait before the next one."""
        msg_id, tool_ids, sigs = self._ids(req, reply)
        usage = self._usage(req, reply)
        start_usage = dict(usage, output_tokens=1)
        yield (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": reply.model or req.model or _DEFAULT_MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        )
        for index, (block, tool_id, sig) in enumerate(zip(reply.blocks, tool_ids, sigs, strict=True)):
            if reply.block_delay > 0:
                yield reply.block_delay, None
            chunk_size = block.chunk_size or reply.chunk_size
            chunk_delay = block.chunk_delay if block.chunk_delay is not None else reply.chunk_delay
            deltas: list[dict[str, JSON]]
            if isinstance(block, Text):
                start: dict[str, JSON] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": c} for c in _chunks(block.text, chunk_size)]
            elif isinstance(block, Thinking):
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": c} for c in _chunks(block.thinking, chunk_size)
                ]
                deltas.append({"type": "signature_delta", "signature": sig})
            else:
                start = {"type": "tool_use", "id": tool_id, "name": block.name, "input": {}}
                raw = json.dumps(dict(block.input))
                deltas = [{"type": "input_json_delta", "partial_json": c} for c in _chunks(raw, chunk_size)]
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            for delta in deltas:
                if chunk_delay > 0:
                    yield chunk_delay, None
                yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.effective_stop_reason(), "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
        yield "message_stop", {"type": "message_stop"}
