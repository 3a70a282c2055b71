"""The `happy` command line outside of a session: versions, help."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pexpect

from happy_launcher.version import __version__
from tests.support.claude_env import find_claude_binary
from tests.support.happy_tui import happy_executable

HAPPY = happy_executable()


def env_with_claude(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HAPPY_CLAUDE_PATH": str(find_claude_binary()),
        "HAPPY_HOME_DIR": str(tmp_path / "happy"),
        "HOME": str(tmp_path),
    }


def output(*argv: str, env: dict[str, str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=True).stdout


def test_version_names_happy_and_the_claude_binary(tmp_path: Path) -> None:
    env = env_with_claude(tmp_path)
    claude = output(env["HAPPY_CLAUDE_PATH"], "--version", env=env)
    assert output(HAPPY, "--version", env=env) == (
        f"happy {__version__}\nclaude {claude.strip()} at {env['HAPPY_CLAUDE_PATH']}\n"
    )


def test_version_without_claude_says_how_to_install(tmp_path: Path) -> None:
    env = {**env_with_claude(tmp_path), "HAPPY_CLAUDE_PATH": str(tmp_path / "missing")}
    done = subprocess.run([HAPPY, "--version"], capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode == 2 and done.stdout.startswith("happy ")
    assert "HAPPY_CLAUDE_PATH" in done.stderr


def test_claude_version_in_a_terminal_is_claudes_own_bytes(tmp_path: Path) -> None:
    """In a terminal, `happy claude --version` starts no session: exactly Claude's output."""
    env = env_with_claude(tmp_path)

    def in_a_pty(*argv: str) -> bytes:
        child = pexpect.spawn(argv[0], list(argv[1:]), env=env, timeout=30)
        out = child.read()
        child.close()
        assert child.exitstatus == 0
        return bytes(out)

    assert in_a_pty(HAPPY, "claude", "--version") == in_a_pty(env["HAPPY_CLAUDE_PATH"], "--version")
    assert not (tmp_path / "happy" / "sessions.db").exists()


def test_help_is_an_alias_of_dash_dash_help(tmp_path: Path) -> None:
    env = env_with_claude(tmp_path)
    help_ = output(HAPPY, "help", env=env)
    assert help_ == output(HAPPY, "--help", env=env) and "replay" in help_ and "claude" in help_
