"""The tests' layout holds: nothing under tests/unit starts Claude or a browser, and every test under
tests/e2e is marked `e2e` (so `pytest -m "not e2e"` is the fast suite)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# What a test starts Claude, Chromium or Happy's server with (a ClaudeEnv only writes its directories).
STARTERS = {
    "tests.support.happy_tui": {"HappyTui"},
    "tests.support.claude_env": {"find_claude_binary", "claude_version"},
    "tests.support.web": {"chromium"},
    "tests.support.happy_server": {"build", "start", "agent"},
    "claude_agent_sdk": {"ClaudeSDKClient", "query"},
}


def starters_imported(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            names = {alias.name for alias in node.names}
            if node.module.startswith("tests.e2e"):
                found.append(node.module)
            found += [f"{node.module}.{name}" for name in names & STARTERS.get(node.module, set())]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("tests.e2e")]
    return found


def test_no_unit_test_starts_claude_or_a_browser() -> None:
    offenders = {
        str(path.relative_to(TESTS)): names
        for path in sorted((TESTS / "unit").rglob("*.py"))
        if (names := starters_imported(path))
    }
    assert offenders == {}, "move these to tests/e2e/"


def test_the_check_sees_a_starter(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text("def f():\n    from tests.support.happy_tui import HappyTui, squeeze\n")
    assert starters_imported(module) == ["tests.support.happy_tui.HappyTui"]


def test_every_e2e_test_is_marked() -> None:
    collect = ["--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not e2e", str(TESTS / "e2e")]
    collect += ["-n", "0"]  # in this process: no xdist workers to start for a collection
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *collect],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 5, done.stdout + done.stderr  # 5: no test collected
    assert " deselected" in done.stdout, done.stdout
