"""Every verb given bad input says so in one line on stderr (never a traceback, never an
ExceptionGroup) and exits with its documented code (README: 2 for a bad command line or input,
1 for a session that cannot be reached or used)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pexpect
import pytest

import happy_launcher
from happy_launcher.errors import ClaudeRefusedError, UsageError
from happy_launcher.store.sessions import SessionStore
from tests.support.claude_env import find_claude_binary
from tests.support.happy_tui import happy_executable

HAPPY = happy_executable()

BAD_INPUT = [
    # happy claude --happy-remote: refused flags and bad values, before anything starts
    (("claude", "--happy-remote", "--bg"), 2, "--bg can't be used in remote mode"),
    (("claude", "--happy-remote", "--from-pr", "12"), 2, "--from-pr can't be used in remote mode"),
    (("claude", "--happy-remote", "--permission-mode", "bogus"), 2, "'bogus' is not one of"),
    (("claude", "--happy-remote", "--max-turns", "x"), 2, "--max-turns needs a whole number"),
    (("claude", "--happy-remote", "--fork-session", "--resume", "x"), 2, "cannot fork"),
    # … and a flag only Claude can judge: Claude's own words, in happy's one line
    (("claude", "--happy-remote", "--frobnicate"), 2, "unknown option '--frobnicate'"),
    (("claude", "--happy-bogus"), 2, "unknown option --happy-bogus"),
    (("replay", "/nonexistent.jsonl"), 2, "no such transcript"),
    (("replay",), 2, "arguments are required: TRANSCRIPT"),
    (("protocol", "schema", "--x"), 2, "unrecognized arguments: --x"),
    (("protocol", "bogus"), 2, "no such command: 'bogus'"),
    (("sessions", "--bogus"), 2, "unrecognized arguments: --bogus"),
    (("send",), 2, "nothing to send"),
    (("send", "a", "b", "c"), 2, "at most SESSION and TEXT"),
    (("watch", "nosuch"), 1, "no session matches 'nosuch'"),
    (("switch", "--to", "sideways"), 2, "invalid choice: 'sideways'"),
    (("switch", "nosuch"), 1, "no session matches 'nosuch'"),
    (("abort", "nosuch"), 1, "no session matches 'nosuch'"),
    (("approve", "nosuch", "r-1"), 1, "no session matches 'nosuch'"),
    (("deny", "nosuch", "--bogus"), 2, "unrecognized arguments: --bogus"),
    (("web", "--port", "99999"), 2, "--port"),
    (("web", "devices", "x"), 2, "unrecognized arguments: x"),
    (("web", "revoke"), 2, "arguments are required: DEVICE"),
    (("web", "revoke", "nosuch"), 2, "no device match"),
]


def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "happy"
    SessionStore.open(home).close()  # a store with a session that is not `nosuch`
    return {
        **os.environ,
        "HAPPY_CLAUDE_PATH": str(find_claude_binary()),
        "HAPPY_HOME_DIR": str(home),
        "HOME": str(tmp_path),
        "COLUMNS": "80",
    }


def assert_one_line(err: str, word: str) -> None:
    assert "Traceback" not in err and "ExceptionGroup" not in err, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("happy"), err
    assert word in err, err


@pytest.mark.parametrize(
    ("argv", "code", "word"), BAD_INPUT, ids=lambda v: " ".join(v) if isinstance(v, tuple) else ""
)
def test_bad_input_is_one_line_and_its_exit_code(
    tmp_path: Path, argv: tuple[str, ...], code: int, word: str
) -> None:
    done = subprocess.run(
        [HAPPY, *argv],
        cwd=tmp_path,
        env=env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert_one_line(done.stderr, word)
    assert done.returncode == code, done.stderr
    if argv[:2] == ("claude", "--happy-remote") and "--frobnicate" not in argv:
        store = SessionStore.open(tmp_path / "happy")  # refused before anything starts: no session
        try:
            assert store.list_sessions() == []
        finally:
            store.close()


@pytest.mark.parametrize("flag", [("--bg",), ("--permission-mode", "bogus"), ("--frobnicate",)])
def test_remote_mode_in_a_terminal_refuses_a_flag_in_one_line(tmp_path: Path, flag: tuple[str, ...]) -> None:
    child = pexpect.spawn(
        HAPPY,
        ["claude", "--happy-remote", *flag],
        cwd=str(tmp_path),
        env=env(tmp_path),
        encoding="utf-8",
        timeout=60,
        dimensions=(24, 100),
    )
    output = child.read()
    child.close()
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("happy: "), output
    assert child.exitstatus == 2, output


def test_the_api_raises_happys_own_errors(tmp_path: Path) -> None:
    """A refused flag, before anything starts; a flag Claude rejects, in Claude's words: both
    HappyErrors, never a bare ExceptionGroup."""
    options = {"cwd": tmp_path, "env": env(tmp_path)}
    with pytest.raises(UsageError, match="--bg can't be used in remote mode"):
        happy_launcher.run("hi", claude_args=["--bg"], **options)
    with pytest.raises(ClaudeRefusedError, match="unknown option '--frobnicate'"):
        happy_launcher.run("hi", claude_args=["--frobnicate"], **options)
