"""Writing transcript files the way Claude lays them out (main file + subagents/), for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def write_jsonl(path: Path, records: list[dict[str, Any]], *, append: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab" if append else "wb") as f:
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in records))


def subagent_paths(main: Path, agent_id: str) -> tuple[Path, Path]:
    base = main.with_suffix("") / "subagents" / f"agent-{agent_id}"
    return base.with_suffix(".jsonl"), base.with_suffix(".meta.json")


def write_subagent(main: Path, agent_id: str, tool_use_id: str | None, records: list[dict[str, Any]]) -> Path:
    jsonl, meta = subagent_paths(main, agent_id)
    write_jsonl(jsonl, records)
    if tool_use_id is not None:
        meta.write_bytes(orjson.dumps({"toolUseId": tool_use_id, "agentType": "general-purpose"}))
    return jsonl


def user(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "message": {"role": "user", "content": content},
        "timestamp": "2026-11-21T10:00:00.000Z",
        **extra,
    }


def assistant(
    uuid: str, *blocks: dict[str, Any], stop_reason: str | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "message": {"role": "assistant", "content": list(blocks), "stop_reason": stop_reason},
        "timestamp": "2026-11-21T10:00:01.000Z",
        **extra,
    }
