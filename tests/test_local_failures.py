"""Local mode with a stand-in Claude (HAPPY_CLAUDE_PATH): failures of happy's own parts never
end or change the user's Claude session."""

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
    assert args[0] == "--session-id" and args[2] == "--settings"
    assert args[4:] == ["--model", "x", "--dangerously-skip-permissions", "a", "prompt"]
    assert result.stderr == ""
    # The run files (hook events, settings overlay) are removed at exit.
    assert list((tmp_path / "happy" / "run").iterdir()) == []
