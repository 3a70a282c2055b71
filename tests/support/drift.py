"""The comparisons of scripts/drift (sans-IO): the committed goldens against ones a newer Claude
Code just wrote, by shape only (record kinds, subtypes, keys, hook payload fields, envelope
shapes; never values: ids and times differ between runs), and the one table it prints.

What fails the run is what a user could see: a record kind or SDK message class that appeared
or vanished (the mapper drops kinds it does not know), a hook field happy reads that vanished,
a new kind the mapper counts as unknown, an envelope sequence of another shape, a golden that
could not be regenerated, a failed smoke test. New or vanished keys and subtypes are listed
without failing: when they matter, the envelopes change too.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "HOOK_FIELDS_READ",
    "Feature",
    "Row",
    "envelope_shapes",
    "exit_code",
    "feature_rows",
    "hook_features",
    "junit_rows",
    "record_features",
    "render",
    "shape_rows",
    "stream_features",
    "unknown_kind_rows",
]

Feature = tuple[str, str]  # (category, name), e.g. ("record kind", "assistant")
Status = Literal["ok", "changed", "FAIL"]

# Categories where anything appearing or vanishing fails the run.
_FAIL_BOTH = ("record kind", "sdk message", "hook event")
# Hook payload fields happy reads (local/hooks.py, local/permission_hook.py): vanishing ones fail.
HOOK_FIELDS_READ = frozenset(
    {"hook_event_name", "session_id", "transcript_path", "cwd", "source", "prompt", "tool_name", "tool_input"}
)


@dataclass(frozen=True)
class Row:
    check: str
    status: Status
    detail: str = ""


def _kind(record: Mapping[str, Any]) -> str:
    kind = record.get("type")
    return kind if isinstance(kind, str) else "<no type>"


def _keys(prefix: str, value: object) -> list[Feature]:
    if not isinstance(value, Mapping):
        return []
    return [("key", f"{prefix}.{k}") for k in value]


def record_features(records: Iterable[Mapping[str, Any]]) -> set[Feature]:
    """A transcript's shape: its kinds, subtypes (system subtypes, attachment types, content
    block types) and keys (top level, and inside `message` and `attachment`)."""
    out: set[Feature] = set()
    for r in records:
        kind = _kind(r)
        out.add(("record kind", kind))
        out.update(_keys(kind, r))
        subtype = r.get("subtype")
        attachment = r.get("attachment")
        if isinstance(attachment, Mapping) and isinstance(attachment.get("type"), str):
            subtype = attachment["type"]
            out.update(_keys(f"{kind}/{subtype}", attachment))
        if isinstance(subtype, str):
            out.add(("subtype", f"{kind}/{subtype}"))
        message = r.get("message")
        if isinstance(message, Mapping):
            out.update(_keys(f"{kind}.message", message))
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, Mapping) and isinstance(block.get("type"), str):
                    out.add(("subtype", f"{kind}/block:{block['type']}"))
                    out.update(_keys(f"{kind}/block:{block['type']}", block))
    return out


def stream_features(lines: Iterable[Mapping[str, Any]]) -> set[Feature]:
    """An SDK stream's shape (tests/support/sdk_stream.py's tagged messages): message classes,
    their subtypes and stream event types, and keys (top level and a system message's data)."""
    out: set[Feature] = set()
    for line in lines:
        cls = str(line.get("_class"))
        if cls in ("Prompt", "Interrupt"):
            continue  # ours (what the recorder sent), not Claude's
        out.add(("sdk message", cls))
        out.update(("sdk key", f"{cls}.{k}") for k in line)
        event = line.get("event")
        sub = event.get("type") if isinstance(event, Mapping) else line.get("subtype")
        if isinstance(sub, str):
            out.add(("sdk subtype", f"{cls}/{sub}"))
            out.update(("sdk key", f"{cls}/{sub}.data.{k}") for k in line.get("data") or {})
    return out


def hook_features(payloads: Iterable[Mapping[str, Any]]) -> set[Feature]:
    """Hook payloads' shape: each event's fields."""
    return {("hook field", f"{p.get('hook_event_name')}.{k}") for p in payloads for k in p} | {
        ("hook event", str(p.get("hook_event_name"))) for p in payloads
    }


def envelope_shapes(envelopes: Iterable[Mapping[str, Any]]) -> list[str]:
    """Envelopes (as dicts) by shape: role, subagent or not, event type and its keys."""
    out = []
    for e in envelopes:
        ev = e.get("ev") or {}
        keys = ",".join(sorted(k for k in ev if k != "t"))
        sub = "/sub" if e.get("subagent") else ""
        out.append(f"{e.get('role')}{sub}:{ev.get('t')}({keys})")
    return out


@dataclass
class _Diff:
    appeared: dict[str, list[str]] = field(default_factory=dict)
    vanished: dict[str, list[str]] = field(default_factory=dict)


def _diff(old: set[Feature], new: set[Feature]) -> _Diff:
    d = _Diff()
    for cat, name in sorted(new - old):
        d.appeared.setdefault(cat, []).append(name)
    for cat, name in sorted(old - new):
        d.vanished.setdefault(cat, []).append(name)
    return d


def _names(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


def feature_rows(label: str, old: set[Feature], new: set[Feature]) -> list[Row]:
    """One row per category of `old` ∪ `new`: ok, changed (listed) or FAIL (see the module doc)."""
    d = _diff(old, new)
    rows = []
    for cat in sorted({c for c, _ in old | new}):
        plus, minus = d.appeared.get(cat, []), d.vanished.get(cat, [])
        parts = [f"+ {_names(plus)}"] * bool(plus) + [f"- {_names(minus)}"] * bool(minus)
        status: Status = "ok"
        if plus or minus:
            status = "changed"
            lost_read = [n for n in minus if n.split(".", 1)[-1] in HOOK_FIELDS_READ]
            if cat in _FAIL_BOTH or (cat == "hook field" and lost_read):
                status = "FAIL"
        rows.append(Row(f"{label}: {cat}s", status, "; ".join(parts)))
    return rows


def shape_rows(label: str, old: Mapping[str, Sequence[str]], new: Mapping[str, Sequence[str]]) -> list[Row]:
    """Envelope shapes per scenario, committed (`old`) against fresh (`new`): one row; the
    scenarios only one side has are left out (a failed regeneration has its own row)."""
    changed = []
    for name in sorted(set(old) & set(new)):
        if list(old[name]) != list(new[name]):
            diff = [
                line
                for line in difflib.unified_diff(list(old[name]), list(new[name]), lineterm="", n=0)
                if line[:1] in "+-" and line[:3] not in ("+++", "---")
            ]
            changed.append(f"{name}: {' '.join(diff[:4])}")
    if not changed:
        return [Row(f"{label}: envelopes", "ok", f"{len(set(old) & set(new))} scenarios same shape")]
    return [Row(f"{label}: envelopes", "FAIL", " | ".join(changed))]


def unknown_kind_rows(label: str, old: Mapping[str, int], new: Mapping[str, int]) -> list[Row]:
    """Kinds the mapper counted as unknown in the fresh replay but not in the committed one."""
    fresh = sorted(set(new) - set(old))
    if fresh:
        return [Row(f"{label}: mapper unknown kinds", "FAIL", ", ".join(fresh))]
    return [Row(f"{label}: mapper unknown kinds", "ok", f"{sum(new.values())} unknown records")]


def exit_code(rows: Iterable[Row]) -> int:
    return 1 if any(r.status == "FAIL" for r in rows) else 0


def render(rows: Sequence[Row], width: int = 100) -> str:
    """The table: check | result | detail (detail wrapped to `width`)."""
    check_w = max([len("check"), *(len(r.check) for r in rows)])
    lines = [f"{'check':<{check_w}}  result   detail", f"{'-' * check_w}  -------  {'-' * 20}"]
    pad = " " * (check_w + 11)
    for r in rows:
        chunks = _wrap(r.detail, max(20, width - len(pad)))
        lines.append(f"{r.check:<{check_w}}  {r.status:<7}  {chunks[0]}".rstrip())
        lines.extend(pad + c for c in chunks[1:])
    return "\n".join(lines)


def _wrap(text: str, width: int) -> list[str]:
    out, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*out, line]


def junit_rows(xml_text: str, names: Mapping[str, str]) -> list[Row]:
    """The smoke set's rows from pytest's JUnit XML: one per test (`names`: node id -> label);
    a test the report lacks failed (it never ran)."""
    import xml.etree.ElementTree as ET

    outcome: dict[str, tuple[Status, str]] = {}
    for case in ET.fromstring(xml_text).iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        node = f"{classname.replace('.', '/')}.py::{name}"
        bad = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if bad is None:
            outcome[node] = ("ok", f"{float(case.get('time', 0)):.1f}s")
        else:
            message = (bad.get("message") or bad.tag).splitlines()[0][:160]
            outcome[node] = ("FAIL", f"{bad.tag}: {message}")
    rows = []
    for node, label in names.items():
        status, detail = outcome.get(node, ("FAIL", "did not run"))
        rows.append(Row(f"smoke: {label}", status, detail))
    return rows
