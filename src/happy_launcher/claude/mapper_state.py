"""The mapper's state: small, explicit, and serialisable so it survives launcher restarts."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from happy_launcher.claude.records import Record, make_record


@dataclass(slots=True)
class Subagent:
    """A `Task`/`Agent` call seen in the transcript, keyed by its provider tool id."""

    session_id: str
    title: str | None
    prompt: str | None
    root_claimed: bool = False  # its opening prompt has been matched (prompt-matching fallback)
    stopped: bool = False


@dataclass(slots=True)
class OrphanLimits:
    """Bounds of the orphan buffer (design §2): overflow drops the record and is counted."""

    max_records: int = 5_000
    max_bytes: int = 32 * 1024 * 1024


@dataclass(slots=True)
class MapperStats:
    unknown_kinds: Counter[str] = field(default_factory=Counter)
    ignored_blocks: Counter[str] = field(default_factory=Counter)
    orphans_dropped: int = 0
    after_stop_dropped: int = 0
    unmatched_tool_results: int = 0

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.unknown_kinds:
            out["unknown_kinds"] = dict(self.unknown_kinds)
        if self.ignored_blocks:
            out["ignored_blocks"] = dict(self.ignored_blocks)
        for name in ("orphans_dropped", "after_stop_dropped", "unmatched_tool_results"):
            if value := getattr(self, name):
                out[name] = value
        return out


@dataclass(slots=True)
class MapperState:
    turn: str | None = None
    subagents: dict[str, Subagent] = field(default_factory=dict)
    # sidechain record uuid -> provider tool id of its subagent (ancestry inference)
    uuid_owner: dict[str, str] = field(default_factory=dict)
    # Claude's agentId (subagent file name, task notifications) -> provider tool id
    agent_ids: dict[str, str] = field(default_factory=dict)
    # tool_use ids whose tool-call-start was emitted and whose end was not yet seen
    open_calls: set[str] = field(default_factory=set)
    # records of subagents whose `Task`/`Agent` call has not been mapped yet, in arrival order
    orphans: dict[str, list[Record]] = field(default_factory=dict)
    orphan_bytes: int = 0
    orphan_count: int = 0
    # stop_reason of the last main-chain assistant record (replay closes the final turn with it)
    last_stop_reason: str | None = None
    # message.id of the API reply whose usage was last emitted (usage rides once per reply)
    usage_message_id: str | None = None
    stats: MapperStats = field(default_factory=MapperStats)

    def active_subagents(self) -> list[str]:
        return [tool_id for tool_id, sub in self.subagents.items() if not sub.stopped]

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "subagents": {tool_id: asdict(sub) for tool_id, sub in self.subagents.items()},
            "uuid_owner": self.uuid_owner,
            "agent_ids": self.agent_ids,
            "open_calls": sorted(self.open_calls),
            "orphans": {
                tool_id: [{"data": r.data, "parent": r.parent_tool_use_id, "size": r.size} for r in records]
                for tool_id, records in self.orphans.items()
            },
            "last_stop_reason": self.last_stop_reason,
            "usage_message_id": self.usage_message_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MapperState:
        state = cls(
            turn=data.get("turn"),
            subagents={tool_id: Subagent(**sub) for tool_id, sub in data.get("subagents", {}).items()},
            uuid_owner=dict(data.get("uuid_owner", {})),
            agent_ids=dict(data.get("agent_ids", {})),
            open_calls=set(data.get("open_calls", [])),
            last_stop_reason=data.get("last_stop_reason"),
            usage_message_id=data.get("usage_message_id"),
        )
        for tool_id, records in data.get("orphans", {}).items():
            state.orphans[tool_id] = [
                make_record(r["data"], size=r["size"], parent_tool_use_id=r["parent"]) for r in records
            ]
            state.orphan_count += len(records)
            state.orphan_bytes += sum(r["size"] for r in records)
        return state
