"""Remote mode's options through the real SDK and the real bundled Claude, against the fake Messages API:
the flags really reach Claude (its init message) and the API request (model, system prompt)."""

from __future__ import annotations

import re
import subprocess
import uuid
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeSDKClient, ResultMessage, SystemMessage

from happy_launcher.claude.args import parse_happy_claude_args
from happy_launcher.remote.options import remote_options
from tests.support.claude_env import ClaudeEnv, find_claude_binary
from tests.support.fake_anthropic import FakeAnthropic
from tests.unit.remote.test_remote_options import readme_table

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90), pytest.mark.anyio]

MODEL = "claude-sonnet-4-5"
MARKER = "APPENDED-BY-HAPPY-TEST"
AGENTS = '{"reviewer": {"description": "Reviews code", "prompt": "You review code."}}'


@pytest.fixture
def claude_options() -> dict[str, Any]:
    # CLAUDE_CONFIG_DIR set explicitly: the SDK lays `env` over the test process's own environment.
    return {"use_config_dir": True}


async def one_turn(
    cenv: ClaudeEnv, argv: list[str], sid: str, *, resume: bool, prompt: str
) -> dict[str, Any]:
    """Run one prompt on a fresh client; the init message's data."""
    built = remote_options(
        parse_happy_claude_args(argv),
        binary=cenv.binary,
        cwd=cenv.cwd,
        env=cenv.env,
        session_id=sid,
        resume=resume,
    )
    assert built.dropped == ()
    init: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with ClaudeSDKClient(built.options) as client:
            await client.query(prompt)
            async for message in client.receive_response():
                if isinstance(message, SystemMessage) and message.subtype == "init":
                    init = message.data
                if isinstance(message, ResultMessage):
                    assert (message.session_id, message.is_error) == (sid, False)
    return init


async def test_flags_reach_claude_and_the_request(cenv: ClaudeEnv, fake: FakeAnthropic) -> None:
    sid = str(uuid.uuid4())  # pre-assigned, as for a new session
    argv = [
        "--model",
        MODEL,
        "--permission-mode",
        "plan",
        "--append-system-prompt",
        MARKER,
        "--agents",
        AGENTS,
    ]
    init = await one_turn(cenv, argv, sid, resume=False, prompt="hello remote")

    assert init["session_id"] == sid
    assert (init["model"], init["permissionMode"]) == (MODEL, "plan")
    assert "reviewer" in init["agents"]  # --agents, carried verbatim
    (request,) = fake.requests
    assert request.model == MODEL
    # Claude Code's own prompt (the preset) with the user's text appended, not the SDK's 135-character one.
    assert MARKER in request.system_text and len(request.system_text) > 5000
    assert cenv.transcript_path(sid).is_file()

    # The same session resumed by id: the first turn is in the conversation the model gets. Without
    # --permission-mode, the mode is the user settings' defaultMode (all setting sources are loaded).
    init = await one_turn(cenv, ["--model", MODEL], sid, resume=True, prompt="second prompt")
    assert (init["session_id"], init["permissionMode"]) == (sid, "acceptEdits")
    second = fake.requests[-1]
    assert [m["role"] for m in second.messages][-3:] == ["user", "assistant", "user"]
    assert "hello remote" in str(second.messages) and second.last_user_text == "second prompt"


# The session's own flags (args.py takes them), and --help.
SESSION_FLAGS = {"--resume", "--continue", "--session-id", "--fork-session", "--settings", "--help"}


def test_readme_table_covers_every_flag_of_the_bundled_claude() -> None:
    out = subprocess.run(
        [str(find_claude_binary()), "--help"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    # Option lines: "  -c, --continue  …", "  --allowedTools, --allowed-tools <tools...>".
    helped = {
        f
        for line in out.splitlines()
        if line.startswith("  -")
        for f in re.findall(r"--[a-zA-Z-]+", line.split("  ")[1])
    }
    documented = {flag for flags, _ in readme_table() for flag in flags}
    aliases = {"--allowed-tools", "--disallowed-tools", "--background"}
    assert helped - documented - SESSION_FLAGS - aliases == set()
