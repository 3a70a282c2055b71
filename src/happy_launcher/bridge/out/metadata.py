"""A Happy session's metadata: what the app shows of it (its `MetadataSchema`: `path` and `host`
required, the rest optional; `lifecycleState` "running" or "archived", as Happy's CLI sets it)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from happy_launcher.version import __version__


@dataclass(frozen=True, slots=True)
class MachineFacts:
    """What every session's metadata says of this machine."""

    machine_id: str
    host: str
    os: str  # as Node's os.platform() names it: "linux", "darwin"
    home_dir: str
    happy_home_dir: str


def machine_facts(machine_id: str, happy_home: Path, env: Mapping[str, str]) -> MachineFacts:
    return MachineFacts(
        machine_id=machine_id,
        host=socket.gethostname(),
        os=sys.platform,
        home_dir=env.get("HOME", ""),
        happy_home_dir=str(happy_home),
    )


def session_metadata(
    machine: MachineFacts,
    *,
    cwd: str,
    claude_session_id: str | None,
    title: str | None,
    running: bool,
    host_pid: int | None,
    now_ms: int,
) -> dict[str, Any]:
    """The metadata of one session now (sealed by the caller with the session's cipher)."""
    metadata: dict[str, Any] = {
        "path": cwd,
        "host": machine.host,
        "os": machine.os,
        "version": __version__,
        "flavor": "claude",
        "machineId": machine.machine_id,
        "homeDir": machine.home_dir,
        "happyHomeDir": machine.happy_home_dir,
        "startedBy": "terminal",
        "lifecycleState": "running" if running else "archived",
        "lifecycleStateSince": now_ms,
    }
    if claude_session_id is not None:
        metadata["claudeSessionId"] = claude_session_id
    if title is not None:
        metadata["name"] = title
        metadata["summary"] = {"text": title, "updatedAt": now_ms}
    if running and host_pid is not None:
        metadata["hostPid"] = host_pid
    return metadata
