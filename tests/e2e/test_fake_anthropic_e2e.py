"""The real Claude CLI in -p mode against the fake Messages API (the fake on its own is in
tests/unit/test_fake_anthropic.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.support.claude_env import claude_version, find_claude_binary, make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, Reply, Rule, Script, Text


def test_real_claude_print_mode_against_the_fake(tmp_path: Path) -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", claude_version(find_claude_binary()))
    script = Script(
        [Rule(name="greet", prompt="Say hi to the fake", reply=Reply([Text("Hi from the fake API!")]))]
    )
    session_id = "0b8a6f0e-3c1d-4e2f-9a7b-5c6d7e8f9a0b"
    with FakeAnthropic(script) as fake:
        env = make_claude_env(tmp_path, fake.url)
        proc = subprocess.run(
            env.command("-p", "Say hi to the fake", "--session-id", session_id),
            cwd=env.cwd,
            env=env.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        reqs = fake.requests
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hi from the fake API!"
    assert [r.rule for r in reqs] == ["greet"]
    assert reqs[0].query == "beta=true" and reqs[0].stream and "Bash" in reqs[0].tool_names
    lines = [json.loads(line) for line in env.transcript_path(session_id).read_text().splitlines()]
    texts = [
        b.get("text")
        for r in lines
        if r.get("type") == "assistant"
        for b in r["message"]["content"]
        if b.get("type") == "text"
    ]
    assert texts == ["Hi from the fake API!"]
