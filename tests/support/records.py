"""Builders of transcript-shaped records for mapper tests (shapes as Claude Code writes them)."""

from __future__ import annotations

import itertools
from typing import Any

from happy_launcher.claude.records import Record, make_record
from happy_launcher.protocol import Envelope

_counter = itertools.count(1)


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_counter):012d}"


def rec(data: dict[str, Any], parent_tool_use_id: str | None = None) -> Record:
    return make_record(data, size=len(repr(data)), parent_tool_use_id=parent_tool_use_id)


def user(
    content: str | list[Any],
    *,
    uuid: str | None = None,
    parent: str | None = None,
    sidechain: bool = False,
    **extra: Any,
) -> Record:
    data = {
        "type": "user",
        "uuid": uuid or _uuid(),
        "parentUuid": parent,
        "isSidechain": sidechain,
        "message": {"role": "user", "content": content},
        "timestamp": "2026-11-21T10:00:00.000Z",
        **extra,
    }
    return rec(data)


def assistant(
    *blocks: dict[str, Any],
    uuid: str | None = None,
    parent: str | None = None,
    sidechain: bool = False,
    stop_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> Record:
    message: dict[str, Any] = {"role": "assistant", "content": list(blocks), "stop_reason": stop_reason}
    if usage is not None:
        message["usage"] = usage
    data = {
        "type": "assistant",
        "uuid": uuid or _uuid(),
        "parentUuid": parent,
        "isSidechain": sidechain,
        "message": message,
        "timestamp": "2026-11-21T10:00:01.000Z",
        **extra,
    }
    return rec(data)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": "sig"}


def tool_use(call: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": args}


def tool_result(call: str, content: Any = "ok", is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call, "content": content, "is_error": is_error}


def system(subtype: str, **extra: Any) -> Record:
    return rec({"type": "system", "subtype": subtype, "uuid": _uuid(), **extra})


def simplify(envelopes: list[Envelope], subagents: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Envelopes without ids and times; turns become T1, T2… and subagents their provider ids."""
    turns: dict[str, str] = {}
    names = {v: k for k, v in (subagents or {}).items()}
    out = []
    for env in envelopes:
        item: dict[str, Any] = {"role": env.role}
        if env.turn is not None:
            item["turn"] = turns.setdefault(env.turn, f"T{len(turns) + 1}")
        if env.subagent is not None:
            item["subagent"] = names.get(env.subagent, env.subagent)
        item["ev"] = env.to_dict()["ev"]
        out.append(item)
    return out
