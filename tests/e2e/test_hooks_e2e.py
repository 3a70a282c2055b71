"""The real Claude runs happy's hook overlay beside the user's own settings (the overlay itself is
in tests/unit/local/test_hooks.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from happy_launcher.claude.args import parse_happy_claude_args
from happy_launcher.local.hooks import HookChannel, parse_hook_line
from happy_launcher.local.launch import claude_argv, launch_plan, relaunch
from tests.support.claude_env import make_claude_env
from tests.support.fake_anthropic import FakeAnthropic


@pytest.mark.timeout(30)
def test_real_claude_runs_our_hook_and_the_users(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        cenv = make_claude_env(tmp_path / "claude", fake.url)
        user_log = tmp_path / "user-hook.jsonl"
        user_hook = {"type": "command", "command": f"cat >> '{user_log}'; echo >> '{user_log}'"}
        (cenv.cwd / "my-settings.json").write_text(
            json.dumps({"hooks": {"SessionStart": [{"hooks": [user_hook]}]}})
        )

        with HookChannel(tmp_path / "run") as channel:
            args = parse_happy_claude_args(["-p", "hi", "--settings", "my-settings.json"])
            launch = launch_plan(args.intent)
            settings = channel.write_settings(args.user_settings, cwd=cenv.cwd)
            argv = claude_argv(cenv.binary, args, launch, settings=str(settings))
            done = subprocess.run(
                argv, cwd=cenv.cwd, env=cenv.env, capture_output=True, text=True, timeout=20
            )
            assert (done.returncode, done.stdout.strip()) == (0, "OK"), done.stderr
            lines = channel.events_path.read_bytes().splitlines()
            overlay_text = settings.read_text()

        events = [e for e in map(parse_hook_line, lines) if e is not None]
        assert [(e.hook_event_name, e.source) for e in events] == [
            ("SessionStart", "startup"),
            ("UserPromptSubmit", None),
        ]
        start, submit = events
        assert submit.prompt == "hi"
        assert start.session_id == launch.session_id
        assert start.transcript_path == cenv.transcript_path(start.session_id)
        assert start.transcript_path.is_file()
        assert start.cwd == str(cenv.cwd)
        # Observed payloads are single-line JSON: every non-blank line parsed.
        assert len(events) == sum(1 for line in lines if line.strip())
        user_events = [json.loads(line) for line in user_log.read_text().splitlines() if line.strip()]
        assert [(u["session_id"], u["source"]) for u in user_events] == [(launch.session_id, "startup")]

        # The launcher is gone (channel removed) but a Claude still runs with the overlay: nothing breaks.
        stale = tmp_path / "stale-overlay.json"
        stale.write_text(overlay_text)
        assert launch.session_id is not None
        later = relaunch(launch.session_id, has_transcript=True)
        again = claude_argv(cenv.binary, args, later, settings=str(stale))
        assert again[-1] == "-p"  # the opening prompt is not repeated
        done = subprocess.run(
            [*again, "again"], cwd=cenv.cwd, env=cenv.env, capture_output=True, text=True, timeout=20
        )
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "OK", "")
        assert not channel.dir.exists()
        user_events = [json.loads(line) for line in user_log.read_text().splitlines() if line.strip()]
        assert [u["source"] for u in user_events] == ["startup", "resume"]  # the user's hook still runs
