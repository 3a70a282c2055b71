"""The little of Socket.IO (protocol 5, over Engine.IO 4, websocket transport only) that the
bridge speaks with Happy's server, sans-IO: packets in and out as the text frames they travel in.

Engine.IO frames: `0` open (JSON: pingInterval, pingTimeout), `2` ping (answered `3` pong), `4`
a Socket.IO packet. Socket.IO packets, default namespace: `0` connect (JSON auth; the server
answers `0{sid}` or `4{message}`), `2` an event (`[name, data]`, an ack id before it when an
answer is wanted), `3` an ack (`<id>[args]`), `1` disconnect. Binary packets are not used by the
server's events and are not understood."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from happy_launcher.errors import HappyServerError

_ACK_ID = re.compile(r"^(\d*)(.*)$", re.S)


@dataclass(frozen=True, slots=True)
class Open:
    ping_interval: float  # seconds
    ping_timeout: float


@dataclass(frozen=True, slots=True)
class Ping:
    pass


@dataclass(frozen=True, slots=True)
class Connected:
    pass


@dataclass(frozen=True, slots=True)
class ConnectRefused:
    message: str


@dataclass(frozen=True, slots=True)
class EventIn:
    name: str
    data: Any
    ack_id: int | None  # the server wants an answer (`ack`) under this id


@dataclass(frozen=True, slots=True)
class AckIn:
    ack_id: int
    data: Any


@dataclass(frozen=True, slots=True)
class Closed:
    """The server closed the Engine.IO session or the namespace."""


Packet = Open | Ping | Connected | ConnectRefused | EventIn | AckIn | Closed | None  # None: not ours
PONG = "3"


def connect(auth: dict[str, Any]) -> str:
    return "40" + json.dumps(auth, separators=(",", ":"))


def event(name: str, data: Any, ack_id: int | None = None) -> str:
    return "42" + ("" if ack_id is None else str(ack_id)) + json.dumps([name, data], separators=(",", ":"))


def ack(ack_id: int, data: Any) -> str:
    return f"43{ack_id}" + json.dumps([data], separators=(",", ":"))


def parse(frame: str) -> Packet:
    """One text frame from the server; HappyServerError for one that is not Engine.IO at all."""
    kind, body = frame[:1], frame[1:]
    if kind == "0":
        opened = _json(body)
        return Open(opened.get("pingInterval", 25000) / 1000, opened.get("pingTimeout", 20000) / 1000)
    if kind == "2":
        return Ping()
    if kind == "1":
        return Closed()
    if kind == "4":
        return _socket_packet(body)
    if kind in ("3", "6"):  # a pong, a noop: nothing to do
        return None
    raise HappyServerError(f"the server sent a frame that is not Engine.IO ({frame[:20]!r})")


def _socket_packet(body: str) -> Packet:
    kind, rest = body[:1], body[1:]
    if kind == "0":
        return Connected()
    if kind == "4":
        refused = _json(rest) if rest else {}
        return ConnectRefused(
            str(refused.get("message", refused)) if isinstance(refused, dict) else str(refused)
        )
    if kind == "1":
        return Closed()
    if kind in ("2", "3"):
        match = _ACK_ID.match(rest)
        assert match is not None  # the pattern matches any text
        ack_id = int(match.group(1)) if match.group(1) else None
        args = _json(match.group(2))
        if not isinstance(args, list):
            return None
        if kind == "3":
            return None if ack_id is None else AckIn(ack_id, args[0] if args else None)
        if args and isinstance(args[0], str):
            return EventIn(args[0], args[1] if len(args) > 1 else None, ack_id)
    return None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise HappyServerError("the server sent a Socket.IO packet that is not JSON") from None
