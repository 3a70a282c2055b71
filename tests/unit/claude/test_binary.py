"""Finding the Claude binary: HAPPY_CLAUDE_PATH > PATH > the one bundled in claude-agent-sdk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from happy_launcher.claude.binary import bundled_claude, find_claude
from happy_launcher.errors import ClaudeNotFoundError


def fake_exe(path: Path, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho fake\n")
    path.chmod(mode)
    return path


@pytest.fixture
def fakes(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(an executable for HAPPY_CLAUDE_PATH, a `claude` on a PATH dir, a stand-in bundled binary)."""
    return (
        fake_exe(tmp_path / "override" / "my-claude"),
        fake_exe(tmp_path / "bin" / "claude"),
        fake_exe(tmp_path / "bundled" / "claude"),
    )


def test_env_var_wins(fakes: tuple[Path, Path, Path]) -> None:
    override, on_path, bundled = fakes
    env = {"HAPPY_CLAUDE_PATH": str(override), "PATH": str(on_path.parent)}
    assert find_claude(env, bundled=lambda: bundled) == override


def test_path_beats_bundled(fakes: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, on_path, bundled = fakes
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PATH": f"{empty}{os.pathsep}{on_path.parent}", "HAPPY_CLAUDE_PATH": ""}  # empty = unset
    assert find_claude(env, bundled=lambda: bundled) == on_path


def test_bundled_is_last(fakes: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, _, bundled = fakes
    assert find_claude({"PATH": str(tmp_path / "nothing-here")}, bundled=lambda: bundled) == bundled


def test_non_executable_on_path_is_skipped(fakes: tuple[Path, Path, Path]) -> None:
    _, on_path, bundled = fakes
    on_path.chmod(0o644)
    assert find_claude({"PATH": str(on_path.parent)}, bundled=lambda: bundled) == bundled


def test_os_environ_is_not_consulted(fakes: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    override, on_path, bundled = fakes
    monkeypatch.setenv("HAPPY_CLAUDE_PATH", str(override))
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_claude({}, bundled=lambda: bundled) == bundled


@pytest.mark.parametrize(
    ("name", "mode", "message"), [("missing", None, "does not exist"), ("plain", 0o644, "not an executable")]
)
def test_bad_env_var_names_the_variable(
    tmp_path: Path, fakes: tuple[Path, Path, Path], name: str, mode: int | None, message: str
) -> None:
    target = tmp_path / name
    if mode is not None:
        fake_exe(target, mode)
    _, on_path, _ = fakes
    # A bad override is an error even though PATH has a claude: the user asked for this one.
    with pytest.raises(ClaudeNotFoundError, match=message) as info:
        find_claude({"HAPPY_CLAUDE_PATH": str(target), "PATH": str(on_path.parent)})
    assert "HAPPY_CLAUDE_PATH" in str(info.value)


def test_directory_env_var_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ClaudeNotFoundError, match="HAPPY_CLAUDE_PATH"):
        find_claude({"HAPPY_CLAUDE_PATH": str(tmp_path)})


def test_nothing_found_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ClaudeNotFoundError) as info:
        find_claude({"PATH": str(tmp_path)}, bundled=lambda: None)
    message = str(info.value)
    assert "pip install claude-agent-sdk" in message
    assert "npm install -g @anthropic-ai/claude-code" in message
    assert "HAPPY_CLAUDE_PATH" in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_real_bundled_binary_is_found_and_runs(tmp_path: Path) -> None:
    found = find_claude({"PATH": str(tmp_path)})
    assert found == bundled_claude()
    assert found.parts[-3:] == ("claude_agent_sdk", "_bundled", "claude")
    out = subprocess.run([str(found), "--version"], capture_output=True, text=True, timeout=30, check=True)
    assert "Claude Code" in out.stdout


def test_find_claude_does_not_import_the_sdk(tmp_path: Path) -> None:
    """find_spec locates the wheel without importing it (the import takes ~0.5 s of every start)."""
    code = (
        "import sys\n"
        "from happy_launcher.claude.binary import find_claude\n"
        "find_claude({'PATH': ''})\n"
        "print('claude_agent_sdk' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False"]
