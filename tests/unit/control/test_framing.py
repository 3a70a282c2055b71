"""A client reads the server's lines by their `type` (control/framing.py): each kind of reply and
event comes back as it was sent, anything else is a WireError that says what is wrong, and reading
`hello` builds no schema of the envelope event."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from happy_launcher.control.framing import WireError, encode, parse_server_line
from happy_launcher.control.wire import (
    AcceptedReply,
    DecisionReply,
    Dropped,
    EnvelopeEvent,
    ErrorReply,
    Facts,
    HelloReply,
    OkReply,
    Permission,
    PermissionRequested,
    PermissionSettled,
    StatusReply,
    WireLine,
)
from happy_launcher.protocol import EnvelopeFactory, SequentialIds
from tests.support.control import facts

FACTS = Facts.of(facts())
PERMISSION = Permission(id="r-1", tool="Bash", input={"command": "ls"}, title="Run ls")
LINES: list[WireLine] = [
    HelloReply(id="h", version=1, happy_version="1.0", session=FACTS),
    OkReply(id="o", outcome="switched"),
    AcceptedReply(id="a", message_seq=3, duplicate=False),
    StatusReply(id="s", session=FACTS, pending=[PERMISSION]),
    DecisionReply(id="d", outcome="denied", message="no", interrupt=True),
    ErrorReply(id=None, code="bad-json", message="not JSON"),
    EnvelopeEvent.model_validate(
        {"seq": 7, "envelope": orjson.loads(EnvelopeFactory(SequentialIds("f")).user_text("hi", 1).to_json())}
    ),
    PermissionRequested(request=PERMISSION),
    PermissionSettled(request_id="r-1", outcome="allowed"),
    Dropped(message="too slow"),
]


@pytest.mark.parametrize("line", LINES, ids=lambda line: type(line).__name__)
def test_every_server_line_comes_back_as_sent(line: WireLine) -> None:
    assert parse_server_line(encode(line).rstrip(b"\n")) == line


@pytest.mark.parametrize(
    ("line", "code", "says"),
    [
        (b"{not json", "bad-json", "not a JSON line"),
        (b"[1, 2]", "bad-request", "type: None is none of hello, ok, accepted"),
        (b'{"type": "bogus"}', "bad-request", "type: 'bogus' is none of"),
        (b'{"type": "ok"}', "bad-request", "id: Field required"),
        (
            b'{"type": "accepted", "id": "a", "message_seq": 0, "duplicate": false}',
            "bad-request",
            "message_seq",
        ),
    ],
)
def test_a_bad_server_line_says_what_is_wrong(line: bytes, code: str, says: str) -> None:
    with pytest.raises(WireError) as raised:
        parse_server_line(line)
    assert raised.value.code == code and says in raised.value.message, raised.value.message


def test_reading_hello_builds_no_schema_but_hellos() -> None:
    """A fresh client reading `hello` builds that reply's schema, not the whole union's (whose
    envelope event holds the protocol's every event: ~30 ms of CPU)."""
    probe = """
from pydantic._internal import _generate_schema
built = []
generate = _generate_schema.GenerateSchema.generate_schema
def recorded(self, obj, *args, **kwargs):
    built.append(getattr(obj, "__name__", repr(obj)))
    return generate(self, obj, *args, **kwargs)
_generate_schema.GenerateSchema.generate_schema = recorded
from happy_launcher.control.framing import parse_server_line
facts = {"happy_session_id": None, "claude_session_id": None, "mode": "local", "cwd": "/", "pid": 1,
         "started_at": 1, "busy": False}
hello = {"type": "hello", "id": "h", "version": 1, "happy_version": "1", "session": facts}
import orjson
assert parse_server_line(orjson.dumps(hello)).session.cwd == "/"
print(built)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['HelloReply']"
