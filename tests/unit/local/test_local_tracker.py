"""The local tracker with its watchers injected: the hook events file is read when its watcher
wakes (a UserPromptSubmit confirms an injection), in-process, with FakeWatchers."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import orjson
import pytest

from happy_launcher.claude.args import parse_happy_claude_args
from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.claude.paths import project_dir
from happy_launcher.claude.watch.fake import FakeWatcher
from happy_launcher.local.launch import launch_plan
from happy_launcher.local.tracker import LocalTracker
from happy_launcher.session.config import RunConfig
from happy_launcher.session.launcher import Run

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]


async def test_the_hook_events_are_read_when_their_watcher_wakes(tmp_path: Path) -> None:
    hooks = tmp_path / "run" / "events.jsonl"
    hooks.parent.mkdir()
    hooks.touch()
    cfg = RunConfig(parse_happy_claude_args([]), Path("claude"), {"HOME": str(tmp_path)}, tmp_path, None)
    launch = launch_plan(cfg.args.intent)
    existing = ExistingFiles.before_launch(project_dir(cfg.env, cfg.cwd), launch.known_sessions)
    ref = Run(tmp_path / "happy", tmp_path)
    transcripts, hook_events = FakeWatcher(), FakeWatcher()
    made = iter([transcripts, hook_events])  # in the order the tracker makes them
    tracker = LocalTracker(cfg, launch, hooks, existing=existing, session=ref.get(), watchers=made.__next__)
    prompted = anyio.Event()
    prompts: list[str] = []

    def on_prompt(prompt: str) -> None:
        prompts.append(prompt)
        prompted.set()

    tracker.on_prompt = on_prompt
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.run)
        with anyio.fail_after(2):
            await hook_events.waiting()  # the empty file is read
        assert hooks.parent in hook_events.watched
        event = {"hook_event_name": "UserPromptSubmit", "session_id": "c-1", "prompt": "hello"}
        hooks.write_bytes(orjson.dumps(event) + b"\n")
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        assert prompts == []  # not before the watcher says so
        hook_events.change(hooks)
        with anyio.fail_after(2):
            await prompted.wait()
        tg.cancel_scope.cancel()
    tracker.finish()
    ref.end("completed")
    assert prompts == ["hello"] and transcripts.closed and hook_events.closed
