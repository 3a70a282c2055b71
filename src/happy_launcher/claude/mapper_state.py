"""The mapper's state: small, explicit, and serialisable so it survives launcher restarts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from happy_launcher.claude.records import Record, make_record, text_of

# Prompts remote mode sent whose transcript copy has not been read yet (bounded: a copy that
# never comes must not hold a later, identical prompt typed in the TUI back for long).
MAX_SENT_PROMPTS = 16
KEPT_STOPPED = 64  # stopped subagents a saved state remembers (see `MapperState.snapshot`)


@dataclass(slots=True)
class Subagent:
    """A `Task`/`Agent` call seen in the transcript, keyed by its provider tool id."""

    session_id: str
    title: str | None
    prompt: str | None
    root_claimed: bool = False  # its opening prompt has been matched (prompt-matching fallback)
    stopped: bool = False
    prompt_shown: bool = False  # its opening prompt was shown
    # ... from the SDK converter's synthetic root: the transcript's own root then shows nothing
    prompt_echo: bool = False

    def shows_prompt(self, text: str, synthetic: bool) -> bool:
        """Whether a sidechain prompt with `text` is shown: the SDK converter's synthetic root
        shows the opening prompt at once and the transcript's own root, read later, nothing;
        whichever of the two comes second shows nothing (once)."""
        if text != self.prompt:
            return True
        if synthetic:
            if self.prompt_shown:
                return False
            self.prompt_echo = True
        elif self.prompt_echo:
            self.prompt_echo = False
            return False
        self.prompt_shown = True
        return True


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
    turn_prompt: str | None = None  # uuid of the prompt remote mode sent that opened `turn`
    subagents: dict[str, Subagent] = field(default_factory=dict)
    # sidechain record uuid -> provider tool id of its subagent (ancestry inference)
    uuid_owner: dict[str, str] = field(default_factory=dict)
    # Claude's agentId (subagent file name, task notifications) -> provider tool id
    agent_ids: dict[str, str] = field(default_factory=dict)
    # tool_use ids whose tool-call-start was emitted and whose end was not yet seen
    open_calls: set[str] = field(default_factory=set)
    # open calls a PermissionRequest hook denied (their end says `denied`)
    denied_calls: set[str] = field(default_factory=set)
    # records of subagents whose `Task`/`Agent` call has not been mapped yet, in arrival order
    orphans: dict[str, list[Record]] = field(default_factory=dict)
    orphan_bytes: int = 0
    orphan_count: int = 0
    # stop_reason of the last main-chain assistant record (replay closes the final turn with it)
    last_stop_reason: str | None = None
    # message.id of the API reply whose usage was last emitted (usage rides once per reply)
    usage_message_id: str | None = None
    # texts of the prompts remote mode sent, oldest first, whose transcript copy is still to come
    sent_prompts: list[str] = field(default_factory=list)
    stats: MapperStats = field(default_factory=MapperStats)

    def active_subagents(self) -> list[str]:
        return [tool_id for tool_id, sub in self.subagents.items() if not sub.stopped]

    def to_dict(self, *, subagents: dict[str, Subagent] | None = None) -> dict[str, Any]:
        subagents = self.subagents if subagents is None else subagents
        return {
            "turn": self.turn,
            "turn_prompt": self.turn_prompt,
            "subagents": {tool_id: _fields(sub) for tool_id, sub in subagents.items()},
            "uuid_owner": self.uuid_owner,
            "agent_ids": self.agent_ids,
            "open_calls": sorted(self.open_calls),
            "denied_calls": sorted(self.denied_calls),
            "orphans": {
                tool_id: [{"data": r.data, "parent": r.parent_tool_use_id, "size": r.size} for r in records]
                for tool_id, records in self.orphans.items()
            },
            "last_stop_reason": self.last_stop_reason,
            "usage_message_id": self.usage_message_id,
            "sent_prompts": list(self.sent_prompts),
        }

    def snapshot(self) -> dict[str, Any]:
        """`to_dict` for the store, saved with every commit that changes it: what a later run needs to go on,
        bounded by the work still open rather than by the session's length. A stopped subagent
        is kept as its ids alone (the last `KEPT_STOPPED` of them: a late record of one is still
        dropped), and ancestry only for the subagents still active and for the orphans' owners
        (records waiting for their call)."""
        active = {t: sub for t, sub in self.subagents.items() if not sub.stopped}
        stopped = [(t, sub.session_id) for t, sub in self.subagents.items() if sub.stopped]
        data = self.to_dict(subagents=active)
        data["stopped"] = stopped[-KEPT_STOPPED:]
        data["uuid_owner"] = {u: t for u, t in self.uuid_owner.items() if t in active or t in self.orphans}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MapperState:
        state = cls(
            turn=data.get("turn"),
            turn_prompt=data.get("turn_prompt"),
            subagents={tool_id: Subagent(**sub) for tool_id, sub in data.get("subagents", {}).items()},
            uuid_owner=dict(data.get("uuid_owner", {})),
            agent_ids=dict(data.get("agent_ids", {})),
            open_calls=set(data.get("open_calls", [])),
            denied_calls=set(data.get("denied_calls", [])),
            last_stop_reason=data.get("last_stop_reason"),
            usage_message_id=data.get("usage_message_id"),
            sent_prompts=list(data.get("sent_prompts", [])),
        )
        for tool_id, session_id in data.get("stopped", []):
            state.subagents.setdefault(tool_id, Subagent(session_id, None, None, stopped=True))
        for tool_id, records in data.get("orphans", {}).items():
            state.orphans[tool_id] = [
                make_record(r["data"], size=r["size"], parent_tool_use_id=r["parent"]) for r in records
            ]
            state.orphan_count += len(records)
            state.orphan_bytes += sum(r["size"] for r in records)
        return state

    # -- subagent routing -------------------------------------------------------------------

    def route(self, record: Record, limits: OrphanLimits) -> tuple[bool, Subagent | None]:
        """(held, subagent): held when buffered as an orphan or dropped after its subagent's stop;
        else the subagent the record belongs to, None for the main chain.

        Inference order (design §2): explicit parent tool id, then `parentUuid` ancestry (for
        sidechain records only), then matching a pending `Task`/`Agent` prompt.
        """
        tool_id = record.explicit_parent_tool_id()
        if tool_id is None and record.is_sidechain:
            parent = record.parent_uuid
            tool_id = self.uuid_owner.get(parent) if parent is not None else None
            if tool_id is None and record.kind == "user":
                tool_id = self._match_prompt(text_of(record.content))
        if tool_id is None:
            return False, None
        if (uuid := record.uuid) is not None:
            self.uuid_owner[uuid] = tool_id
        sub = self.subagents.get(tool_id)
        if sub is None:
            self._buffer(tool_id, record, limits)
            return True, None
        if sub.stopped:
            self.stats.after_stop_dropped += 1
            return True, None
        return False, sub

    def _match_prompt(self, text: str) -> str | None:
        if not text:
            return None
        for tool_id, sub in self.subagents.items():
            if not sub.root_claimed and not sub.stopped and sub.prompt == text:
                sub.root_claimed = True
                return tool_id
        return None

    def _buffer(self, tool_id: str, record: Record, limits: OrphanLimits) -> None:
        if self.orphan_count >= limits.max_records or self.orphan_bytes + record.size > limits.max_bytes:
            self.stats.orphans_dropped += 1
            return
        self.orphans.setdefault(tool_id, []).append(record)
        self.orphan_count += 1
        self.orphan_bytes += record.size

    def take_orphans(self, tool_id: str) -> list[Record]:
        """The records buffered for a subagent whose call has just been mapped."""
        records = self.orphans.pop(tool_id, [])
        self.orphan_count -= len(records)
        self.orphan_bytes -= sum(r.size for r in records)
        return records

    def first_usage_of(self, record: Record) -> bool:
        """Claude writes one record per content block, each with the whole reply's usage: carry
        it once per API message, so that summing `usage` over envelopes counts tokens once."""
        message_id = record.message.get("id")
        if not isinstance(message_id, str):
            return True
        if message_id == self.usage_message_id:
            return False
        self.usage_message_id = message_id
        return True

    def take_sent_prompt(self, text: str) -> bool:
        """Whether `text` is the transcript's copy of a prompt remote mode sent (consumed: a
        copy maps to nothing once). Copies come in the order the prompts were sent, so older
        entries whose copy never came are forgotten with it."""
        sent = self.sent_prompts
        if text not in sent:
            return False
        del sent[: sent.index(text) + 1]
        return True


_SUBAGENT_FIELDS = tuple(f.name for f in fields(Subagent))


def _fields(sub: Subagent) -> dict[str, Any]:
    # Not dataclasses.asdict: it deep-copies, and this runs with every commit.
    return {name: getattr(sub, name) for name in _SUBAGENT_FIELDS}
