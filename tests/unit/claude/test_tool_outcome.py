"""How a tool call ended, carried by `tool-call-end.status` (docs/decisions.md): from the tool
results Claude writes (texts as seen in its transcripts, tests/e2e/test_permission_e2e.py and
tests/e2e/test_remote_e2e.py), and a PermissionRequest hook's denial from its attachment."""

from __future__ import annotations

from typing import Any

import pytest

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.mapper_state import MapperState
from happy_launcher.protocol import SequentialIds
from happy_launcher.protocol.wire import validated
from tests.support.records import assistant, rec, tool_result, tool_use, user

NOW = 5
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
    "file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the "
    "user to tell you how to proceed."
)


def ended(m: Mapper, result: dict[str, Any], **extra: Any) -> dict[str, Any]:
    m.feed(assistant(tool_use("toolu_a", "Bash", command="ls")), NOW)
    [end] = m.feed(user([result], **extra), NOW)
    assert validated(end.to_dict())  # the protocol model takes the field
    ev: dict[str, Any] = end.to_dict()["ev"]
    return ev


@pytest.mark.parametrize(
    ("result", "extra", "status"),
    [
        (tool_result("toolu_a", "file.txt"), {}, None),
        (tool_result("toolu_a", "Exit code 2\nls: no such file", is_error=True), {}, "failed"),
        (
            tool_result("toolu_a", REJECTED, is_error=True),
            {"toolUseResult": "User rejected tool use"},
            "cancelled",
        ),
        (
            tool_result("toolu_a", "[Tool call interrupted: the session ended]", is_error=True),
            {},
            "cancelled",
        ),
        (tool_result("toolu_a", "Permission to use Bash has been denied: no", is_error=True), {}, "denied"),
        (tool_result("toolu_a", [{"type": "text", "text": REJECTED}], is_error=True), {}, "cancelled"),
    ],
    ids=["done", "failed", "rejected", "interrupted", "denied-by-rule", "blocks"],
)
def test_a_tool_call_end_says_how_the_call_ended(
    result: dict[str, Any], extra: dict[str, Any], status: str | None
) -> None:
    ev = ended(Mapper(SequentialIds()), result, **extra)
    assert ev == {"t": "tool-call-end", "call": "toolu_a", **({"status": status} if status else {})}


def hook_decision(call: str, decision: str) -> Any:
    attachment = {"type": "hook_permission_decision", "decision": decision, "toolUseID": call}
    return rec(
        {
            "type": "attachment",
            "uuid": f"att-{call}",
            "attachment": {**attachment, "hookEvent": "PermissionRequest"},
        }
    )


def test_a_call_a_hook_denied_ends_denied_even_across_a_restart() -> None:
    m = Mapper(SequentialIds())
    m.feed(assistant(tool_use("toolu_a", "Bash", command="ls")), NOW)
    assert m.feed(hook_decision("toolu_a", "deny"), NOW) == []  # an attachment emits nothing
    again = Mapper(SequentialIds(), MapperState.from_dict(m.state.to_dict()))
    [end] = again.feed(user([tool_result("toolu_a", "not now", is_error=True)]), NOW)
    assert end.to_dict()["ev"] == {"t": "tool-call-end", "call": "toolu_a", "status": "denied"}
    assert not again.state.denied_calls
    allowed = Mapper(SequentialIds())
    allowed.feed(hook_decision("toolu_a", "allow"), NOW)
    assert ended(allowed, tool_result("toolu_a", "boom", is_error=True))["status"] == "failed"
