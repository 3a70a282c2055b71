"""A message's permission mode and model (Happy's `meta.permissionMode`, `meta.model`), with the
real bundled Claude under the Agent SDK (`happy claude --happy-remote` without a terminal)
against the fake Messages API: `happy send --permission-mode bypassPermissions --model M` makes
Claude ask the API with that model and run a tool the settings would ask about, without asking."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.store.sessions import SessionStore
from tests.e2e.test_web_e2e import LineSession, script
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.happy_tui import happy_executable

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
MODEL = "claude-happy-meta-test"
__all__ = ["script"]  # the fixture: the web test's rules (a Bash call, then its end)


@pytest.fixture
def claude_options() -> dict[str, Any]:
    return {"permission_mode": "default", "allow": ()}  # Bash would be asked about


@pytest.fixture
def sdk(cenv: ClaudeEnv, home: Path) -> Iterator[LineSession]:
    session = LineSession(cenv, home)
    yield session
    session.close()


def happy_send(cenv: ClaudeEnv, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home)}
    return subprocess.run(
        [happy_executable(), "send", *args], env=env, cwd=cenv.cwd, capture_output=True, text=True, timeout=60
    )


def service_texts(home: Path) -> list[str]:
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
        return [e.ev.text for _, e in store.envelopes(session.id) if e.ev.t == "service"]


def test_a_messages_mode_and_model_hold_for_its_prompt(
    sdk: LineSession, cenv: ClaudeEnv, home: Path, fake: FakeAnthropic
) -> None:
    sdk.say("hello")
    sdk.wait_line("Echo: hello")
    bad = happy_send(cenv, home, "--permission-mode", "sometimes", "use bash")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "'sometimes' is not one of" in bad.stderr
    sent = happy_send(cenv, home, "--permission-mode", "yolo", "--model", MODEL, "use bash")
    assert sent.returncode == 0, sent.stderr
    sdk.say("and after")  # line mode prints only its own turns; this one waits for the message's
    sdk.wait_line("Echo: and after")
    assert (cenv.cwd / "written.txt").read_text() == "hi\n"  # run, never asked about
    tool_turn = [(r.rule, r.model) for r in fake.requests if r.rule in ("bash", "after")]
    assert tool_turn == [("bash", MODEL), ("after", MODEL)]
    models = {r.last_user_text: r.model for r in fake.requests if r.rule == "fallback"}
    assert models["hello"] != MODEL and models["and after"] == MODEL  # it holds after its prompt
    assert service_texts(home) == []  # nothing failed to apply
