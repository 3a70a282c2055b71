"""Which live Claude process holds a Claude session id: the busy-session guard.

Every running Claude, TUI and SDK alike, registers itself in ``<CLAUDE_CONFIG_DIR or ~/.claude>/sessions/
<pid>.json`` (``pid``, ``sessionId``, ``procStart``: its start time in clock ticks after boot, the same
number as field 22 of ``/proc/<pid>/stat``; switching-facts §6). Two front ends on one session id fork its
transcript without a word, so a launcher asks here first. A clean exit removes the file; after a SIGKILL it
stays, so an entry counts only while its pid runs with the start time it recorded (a recycled pid is
another process). An unreadable or malformed entry is skipped: this guard must never stop a launch by
crashing.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

from happy_launcher.claude.paths import claude_config_dir
from happy_launcher.errors import SessionBusyError
from happy_launcher.home.procs import ProcessId, is_alive

__all__ = ["LiveClaude", "ensure_not_busy", "live_claudes", "registry_dir", "session_holder"]

_log = logging.getLogger(__name__)
_PROC = Path("/proc")
_MAX_ENTRY = 64 * 1024  # real entries are under 1 KiB; a bigger file is not one of Claude's


@dataclass(frozen=True)
class LiveClaude:
    pid: int
    session_id: str
    cwd: str | None = None
    entrypoint: str | None = None  # "cli" (the TUI, -p) or "sdk-py" (the Agent SDK)


def registry_dir(env: Mapping[str, str]) -> Path:
    """Claude's registry of live processes for the environment Claude runs with."""
    return claude_config_dir(env) / "sessions"


def live_claudes(registry: Path, *, proc: Path = _PROC) -> Iterator[LiveClaude]:
    """The registered Claude processes that still run (stale and malformed entries skipped)."""
    try:
        paths = sorted(registry.glob("*.json"))
    except OSError as exc:  # no registry yet, or not readable: nothing known to be live
        _log.debug("claude registry %s: %s", registry, exc)
        return
    for path in paths:
        entry = _read_entry(path)
        if entry is not None and is_alive(entry[0], proc):
            yield entry[1]


def session_holder(
    registry: Path, session_id: str, *, ours: Collection[int] = (), proc: Path = _PROC
) -> LiveClaude | None:
    """The live Claude process, other than the pids in ``ours``, that holds ``session_id``; None if none."""
    for live in live_claudes(registry, proc=proc):
        if live.session_id == session_id and live.pid not in ours:
            return live
    return None


def ensure_not_busy(
    registry: Path, session_id: str, *, ours: Collection[int] = (), proc: Path = _PROC
) -> None:
    """Raise :class:`SessionBusyError` if another live Claude process holds ``session_id``."""
    holder = session_holder(registry, session_id, ours=ours, proc=proc)
    if holder is not None:
        raise SessionBusyError(session_id, holder.pid, holder.cwd)


def _read_entry(path: Path) -> tuple[ProcessId, LiveClaude] | None:
    try:
        with path.open("rb") as f:
            raw = f.read(_MAX_ENTRY + 1)
        data = orjson.loads(raw) if len(raw) <= _MAX_ENTRY else None
    except (OSError, orjson.JSONDecodeError) as exc:
        _log.debug("claude registry entry %s skipped: %s", path, exc)
        return None
    if not isinstance(data, dict):
        _log.debug("claude registry entry %s skipped: not a JSON object (or too big)", path)
        return None
    pid, session_id, cwd, entrypoint = (data.get(k) for k in ("pid", "sessionId", "cwd", "entrypoint"))
    if type(pid) is not int or pid <= 0 or not isinstance(session_id, str) or not session_id:
        _log.debug("claude registry entry %s skipped: no pid or sessionId", path)
        return None
    live = LiveClaude(
        pid,
        session_id,
        cwd if isinstance(cwd, str) else None,
        entrypoint if isinstance(entrypoint, str) else None,
    )
    return ProcessId(pid, _start(data.get("procStart"))), live


def _start(value: object) -> int | None:
    # A decimal string of clock ticks (Claude 2.1.329 on Linux). Anything else cannot be compared with
    # /proc, so only the pid is checked then.
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None
