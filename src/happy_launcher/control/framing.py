"""The control socket's lines (docs/control-protocol.md) as bytes: one JSON object per line,
parsed into the messages of `wire.py` and encoded from them; the envelope event spliced around
the stored bytes; a splitter of a byte stream into bounded lines; the schemas the doc shows."""

from __future__ import annotations

from functools import cache
from typing import Any, cast

import orjson
from pydantic import TypeAdapter, ValidationError

from happy_launcher.control.wire import (
    EVENTS,
    REPLIES,
    REQUESTS,
    ErrorCode,
    ErrorReply,
    Event,
    Reply,
    Request,
    WireLine,
)

_ENVELOPE_PREFIX = b'{"type":"envelope","seq":'


class WireError(Exception):
    """A line that is not a valid message; `request_id` when one could be read from it."""

    def __init__(self, code: ErrorCode, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.request_id = code, message, request_id

    def reply(self) -> ErrorReply:
        return ErrorReply(id=self.request_id, code=self.code, message=self.message)


# Built at first use (the schemas of every model of a union: ~30 ms of CPU each): a client never
# parses a request, and a client that reads an ended session from the store parses no line.
@cache
def _request() -> TypeAdapter[Request]:
    return TypeAdapter[Request](Request)


# A server line is validated by the model its `type` names (as a discriminated union would), so
# a client builds the schemas of the lines it gets: `happy sessions` only `hello`'s, not the
# envelope's (the protocol's whole event union).
_SERVER_LINES: dict[object, type[WireLine]] = {
    model.model_fields["type"].default: model for model in (*REPLIES, *EVENTS)
}


def parse_request(line: bytes) -> Request:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise WireError("bad-json", f"not a JSON line ({exc})") from None
    request_id = data.get("id") if isinstance(data, dict) else None
    request_id = request_id if isinstance(request_id, str) and 0 < len(request_id) <= 200 else None
    try:
        return _request().validate_python(data)
    except ValidationError as exc:
        raise WireError("bad-request", _explain(exc), request_id) from None


def parse_server_line(line: bytes) -> Reply | Event:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise WireError("bad-json", f"not a JSON line ({exc})") from None
    kind = data.get("type") if isinstance(data, dict) else None
    model = _SERVER_LINES.get(kind) if isinstance(kind, str) else None
    if model is None:
        known = ", ".join(str(name) for name in _SERVER_LINES)
        raise WireError("bad-request", f"type: {kind!r} is none of {known}; see docs/control-protocol.md")
    try:
        return cast(Reply | Event, model.model_validate(data))
    except ValidationError as exc:
        raise WireError("bad-request", _explain(exc)) from None


def _explain(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the line"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}; see docs/control-protocol.md"


def encode(line: WireLine) -> bytes:
    return line.model_dump_json().encode() + b"\n"


def envelope_line(seq: int, body: bytes) -> bytes:
    """An `envelope` event spliced around the stored bytes: no re-encoding, and the client gets
    the envelope exactly as stored."""
    return b'%s%d,"envelope":%s}\n' % (_ENVELOPE_PREFIX, seq, body)


def split_envelope_line(line: bytes) -> tuple[int, bytes] | None:
    """(seq, envelope bytes) of a line made by `envelope_line`; None for any other line."""
    if not line.startswith(_ENVELOPE_PREFIX) or not line.endswith(b"}"):
        return None
    comma = line.find(b",", len(_ENVELOPE_PREFIX))
    seq = line[len(_ENVELOPE_PREFIX) : comma]
    if comma < 0 or not seq.isdigit() or not line.startswith(b'"envelope":', comma + 1):
        return None
    return int(seq), line[comma + 12 : -1]


class LineSplitter:
    """Bytes in, complete lines out (without the newline). A line longer than `max_line` comes
    out as None, once, and the rest of it is skipped: the connection stays usable."""

    def __init__(self, max_line: int) -> None:
        self._max = max_line
        self._partial = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes | None]:
        lines: list[bytes | None] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if self._skipping:
                self._skipping = False
            elif len(self._partial) + end - start > self._max:
                lines.append(None)
            else:
                lines.append(bytes(self._partial + data[start:end]) if self._partial else data[start:end])
            self._partial.clear()
            start = end + 1
        if not self._skipping:
            self._partial += data[start:]
            if len(self._partial) > self._max:
                lines.append(None)
                self._partial.clear()
                self._skipping = True
        return lines


def schemas() -> dict[str, dict[str, Any]]:
    """Every line's JSON Schema, by model name (the doc's source)."""
    return {model.__name__: model.model_json_schema() for model in (*REQUESTS, *REPLIES, *EVENTS)}
