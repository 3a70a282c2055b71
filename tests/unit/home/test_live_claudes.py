"""The busy-session guard over fake registries of Claude's live processes, with real pids: this test
process (with its real start time) as the live one, a reaped child as a dead one."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.errors import HappyError, SessionBusyError
from happy_launcher.home.live_claudes import (
    LiveClaude,
    ensure_not_busy,
    live_claudes,
    registry_dir,
    session_holder,
)
from happy_launcher.home.procs import start_time

S = "11111111-2222-4333-8444-555555555555"
OTHER = "99999999-2222-4333-8444-555555555555"
ME = os.getpid()


def my_start() -> str:
    start = start_time(ME)
    assert start is not None
    return str(start)


@pytest.fixture(scope="module")
def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()  # reaped: the pid names no process now
    return child.pid


def entry(registry: Path, pid: int, session_id: str = S, **fields: Any) -> Path:
    registry.mkdir(parents=True, exist_ok=True)
    data = {"pid": pid, "sessionId": session_id, "cwd": "/proj", "entrypoint": "cli", **fields}
    path = registry / f"{pid}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_live_process_holds_its_session(tmp_path: Path) -> None:
    entry(tmp_path, ME, procStart=my_start())
    assert session_holder(tmp_path, S) == LiveClaude(ME, S, "/proj", "cli")
    assert session_holder(tmp_path, OTHER) is None
    assert list(live_claudes(tmp_path)) == [LiveClaude(ME, S, "/proj", "cli")]


def test_ours_are_not_reported(tmp_path: Path) -> None:
    entry(tmp_path, ME, procStart=my_start())
    assert session_holder(tmp_path, S, ours={ME}) is None
    ensure_not_busy(tmp_path, S, ours=[ME])


@pytest.mark.parametrize("fields", [{"procStart": "12345"}, {}])
def test_dead_pid_is_stale(tmp_path: Path, dead_pid: int, fields: dict[str, Any]) -> None:
    entry(tmp_path, dead_pid, **fields)
    assert session_holder(tmp_path, S) is None


def test_an_exited_claude_not_yet_reaped_is_stale(tmp_path: Path) -> None:
    # Its parent has not waited for it yet: /proc still lists it, as a zombie (state Z).
    child = subprocess.Popen([sys.executable, "-c", ""])
    try:
        start = start_time(child.pid)
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
        assert start_time(child.pid) == start  # still listed, with its start time
        entry(tmp_path, child.pid, procStart=str(start))
        assert session_holder(tmp_path, S) is None
    finally:
        child.wait()


def test_reused_pid_is_stale(tmp_path: Path) -> None:
    # This pid runs, but it started at another time than the Claude that registered it.
    entry(tmp_path, ME, procStart=str(int(my_start()) - 1))
    assert session_holder(tmp_path, S) is None


@pytest.mark.parametrize("proc_start", [None, "", "Tue Nov 18 10:00:00 2025", 12.5])
def test_without_a_comparable_start_time_the_pid_decides(tmp_path: Path, proc_start: object) -> None:
    fields: dict[str, Any] = {} if proc_start is None else {"procStart": proc_start}
    entry(tmp_path, ME, **fields)
    assert session_holder(tmp_path, S) is not None


def test_missing_registry(tmp_path: Path) -> None:
    assert session_holder(tmp_path / "nope", S) is None
    assert list(live_claudes(tmp_path / "nope")) == []


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"",
        b"[1, 2]",
        b'"text"',
        json.dumps({"sessionId": S}).encode(),
        json.dumps({"pid": str(ME), "sessionId": S}).encode(),
        json.dumps({"pid": True, "sessionId": S}).encode(),
        json.dumps({"pid": -ME, "sessionId": S}).encode(),
        json.dumps({"pid": ME}).encode(),
        json.dumps({"pid": ME, "sessionId": 7}).encode(),
        json.dumps({"pid": ME, "sessionId": S, "pad": "x" * 100_000}).encode(),  # far bigger than any entry
        b"\xff\xfe garbage",
    ],
    ids=[  # not the content: it holds this process's pid, and each xdist worker must collect the same ids
        "not-json",
        "empty",
        "a-list",
        "a-string",
        "no-pid",
        "pid-as-text",
        "pid-as-bool",
        "negative-pid",
        "no-session-id",
        "session-id-not-text",
        "oversized",
        "not-utf8",
    ],
)
def test_malformed_entries_are_skipped_with_a_debug_log(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / f"{ME}.json").write_bytes(content)
    with caplog.at_level(logging.DEBUG, logger="happy_launcher.home.live_claudes"):
        assert session_holder(tmp_path, S) is None
    assert any(f"{ME}.json" in r.getMessage() for r in caplog.records)


def test_unreadable_entry_and_other_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "12.json").mkdir()  # reading it fails
    (tmp_path / f"{ME}.abc.key").write_text(json.dumps({"pid": ME, "sessionId": S}))  # not an entry
    entry(tmp_path, ME, procStart=my_start())
    assert session_holder(tmp_path, S) == LiveClaude(ME, S, "/proj", "cli")


def test_busy_error_says_what_to_do(tmp_path: Path) -> None:
    entry(tmp_path, ME, procStart=my_start())
    with pytest.raises(SessionBusyError) as caught:
        ensure_not_busy(tmp_path, S)
    err = caught.value
    assert isinstance(err, HappyError) and (err.session_id, err.pid, err.cwd) == (S, ME, "/proj")
    message = str(err)
    assert "\n" not in message
    assert S in message and f"pid {ME}" in message and "/proj" in message and "close it first" in message
    ensure_not_busy(tmp_path, OTHER)


def test_registry_dir_follows_claude_config_dir() -> None:
    assert registry_dir({"HOME": "/home/u"}) == Path("/home/u/.claude/sessions")
    assert registry_dir({"HOME": "/home/u", "CLAUDE_CONFIG_DIR": "/cfg"}) == Path("/cfg/sessions")
