"""`happy claude` with a stand-in Claude (HAPPY_CLAUDE_PATH), run without a terminal: failures of
happy's own parts never end or change the user's Claude session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HAPPY = str(Path(sys.executable).with_name("happy"))


def stand_in(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "claude"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def run_happy(tmp_path: Path, claude: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "HAPPY_HOME_DIR": str(tmp_path / "happy"),
        "HAPPY_CLAUDE_PATH": str(claude),
    }
    return subprocess.run(
        [HAPPY, "claude", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_an_unusable_store_does_not_stop_claude(tmp_path: Path) -> None:
    (tmp_path / "happy" / "sessions.db").mkdir(parents=True)  # not a database
    result = run_happy(tmp_path, stand_in(tmp_path, "echo claude-ran; exit 0"))
    assert "claude-ran" in result.stdout
    assert result.returncode == 0  # Claude's own exit code
    assert "happy: mirroring this session failed" in result.stderr
    assert "sessions.db" in result.stderr


def test_exit_code_and_arguments_pass_through(tmp_path: Path) -> None:
    claude = stand_in(tmp_path, 'echo "args: $*"; exit 3')
    result = run_happy(tmp_path, claude, "--model", "x", "--yolo", "a prompt")
    assert result.returncode == 3
    args = result.stdout.split("args: ", 1)[1].split()
    # No terminal: no settings overlay (no hook), only the pre-assigned session id is added.
    assert args[0] == "--session-id"
    assert args[2:] == ["--model", "x", "--dangerously-skip-permissions", "a", "prompt"]
    assert result.stderr == ""
    assert list((tmp_path / "happy" / "run").iterdir()) == []  # nothing left behind


def test_the_users_settings_pass_through_unchanged(tmp_path: Path) -> None:
    claude = stand_in(tmp_path, 'echo "args: $*"')
    result = run_happy(tmp_path, claude, "--settings", '{"a":1}', "-p", "hi")
    assert result.stdout.split("args: ", 1)[1].split()[2:] == ["--settings", '{"a":1}', "-p", "hi"]


def test_a_missing_claude_says_how_to_install(tmp_path: Path) -> None:
    result = run_happy(tmp_path, tmp_path / "nowhere" / "claude", "-p", "hi")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("happy: HAPPY_CLAUDE_PATH=") and "does not exist" in result.stderr


def test_state_files_are_private_even_when_an_older_happy_made_them(tmp_path: Path) -> None:
    home = tmp_path / "happy"
    home.mkdir()
    for name in ("happy.log", "sessions.db"):
        (home / name).touch(mode=0o644)
        (home / name).chmod(0o644)
    result = run_happy(tmp_path, stand_in(tmp_path, "exit 0"), "-p", "hi")
    assert result.returncode == 0, result.stderr
    assert {name: (home / name).stat().st_mode & 0o777 for name in ("happy.log", "sessions.db")} == {
        "happy.log": 0o600,
        "sessions.db": 0o600,
    }
