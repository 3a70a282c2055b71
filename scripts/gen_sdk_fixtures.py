#!/usr/bin/env python3
"""Regenerate the recorded Agent SDK streams under tests/fixtures/sdk/.

Runs `ClaudeSDKClient` with the REAL bundled Claude Code binary (cli_path pinned, the claude_code
system prompt preset, bypassPermissions, partial messages and forwarded subagent text, as remote
mode runs it) against the scripted fake Messages API, one scenario at a time. For each scenario
it saves, under ``<out>/<scenario>/``:

- ``stream.jsonl``: every SDK message in the order the client yielded it, as a tagged dict of the
  message object (tests/support/sdk_stream.py rebuilds the objects), plus the prompts sent
  (``{"_class": "Prompt", "text": ..., "uuid": ...}``) and interrupts (``{"_class": "Interrupt"}``) at the
  point they were made;
- the transcript files that run wrote (main + subagents), as scripts/gen_fixtures.py does;
- ``scenario.json``: what was run.

    .venv/bin/python scripts/gen_sdk_fixtures.py                  # all scenarios
    .venv/bin/python scripts/gen_sdk_fixtures.py --only text      # one (repeatable)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    StreamEvent,
    ToolUseBlock,
)

from scripts.gen_fixtures import (
    ScenarioError,
    agent_bg_script,
    agent_fg_script,
    api_error_script,
    bash_script,
    copy_transcripts,
    describe_request,
    describe_rule,
    interrupted_script,
    plain_script,
    run_all,
    session_id_for,
    thinking_script,
    two_turns_script,
)
from tests.support.claude_env import make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, Reply, Rule, Script, Text, ToolUse
from tests.support.sdk_stream import encode_message

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sdk"
TIMEOUT = 30.0


class Recorder:
    """Reads the client's messages in a task and keeps them, tagged, with the prompts sent."""

    def __init__(self, client: ClaudeSDKClient) -> None:
        self.client = client
        self.lines: list[dict[str, Any]] = []
        self.messages: list[object] = []
        self._changed = anyio.Event()

    async def read(self) -> None:
        async for message in self.client.receive_messages():
            self.messages.append(message)
            self.lines.append(encode_message(message))
            self._changed.set()
            self._changed = anyio.Event()

    def count(self, kind: type, pred: Callable[[Any], bool] = lambda _: True) -> int:
        return sum(1 for m in self.messages if isinstance(m, kind) and pred(m))

    async def wait(self, cond: Callable[[], bool], what: str) -> None:
        try:
            with anyio.fail_after(TIMEOUT):
                while not cond():
                    await self._changed.wait()
        except TimeoutError:
            raise ScenarioError(f"timed out after {TIMEOUT}s waiting for {what}") from None

    async def ask(self, text: str, *, results: int | None = None) -> None:
        """Send a prompt, with a uuid as remote mode does (Claude writes its transcript record
        under it); with `results`, wait until that many ResultMessages arrived."""
        prompt_uuid = str(uuid.uuid4())
        self.lines.append({"_class": "Prompt", "text": text, "uuid": prompt_uuid})
        message = {"type": "user", "message": {"role": "user", "content": text}, "uuid": prompt_uuid}
        await self.client.query(_one(message))
        if results is not None:
            await self.wait(lambda: self.count(ResultMessage) >= results, f"{results} result(s)")

    async def interrupt(self) -> None:
        self.lines.append({"_class": "Interrupt"})
        await self.client.interrupt()


async def _one(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield message


Run = Callable[[Recorder], Awaitable[None]]


@dataclass
class SdkScenario:
    name: str
    description: str
    script: Callable[[], Script]
    run: Run
    env: dict[str, str] = field(default_factory=dict)


async def text_run(r: Recorder) -> None:
    await r.ask("Say hello", results=1)


async def bash_run(r: Recorder) -> None:
    await r.ask("Run echo hello", results=1)


async def thinking_run(r: Recorder) -> None:
    await r.ask("Think first: what is 2 + 2?", results=1)


async def agent_fg_run(r: Recorder) -> None:
    await r.ask("Delegate the echo to a subagent", results=1)


async def agent_bg_run(r: Recorder) -> None:
    # The background agent's turn ends with a second init ... result (switching-facts §7).
    await r.ask("Delegate the echo to a subagent", results=2)


async def api_error_run(r: Recorder) -> None:
    await r.ask("This will fail", results=1)
    await r.ask("Try again", results=2)


def _is_text_delta(m: Any) -> bool:
    return isinstance(m, StreamEvent) and m.event.get("delta", {}).get("type") == "text_delta"


async def interrupted_run(r: Recorder) -> None:
    await r.ask("Count slowly to 200")
    await r.wait(lambda: r.count(StreamEvent, _is_text_delta) >= 3, "streamed text")
    await r.interrupt()
    await r.wait(lambda: r.count(ResultMessage) >= 1, "the interrupted result")
    await r.ask("Never mind, stop", results=2)


def tool_interrupt_script() -> Script:
    sleep = ToolUse("Bash", {"command": "sleep 20; echo slept", "description": "Sleep a while"})
    return Script(
        [
            Rule(name="after interrupt", prompt="Never mind", reply=Reply([Text("OK, no more sleeping.")])),
            Rule(name="sleep", prompt="Sleep please", reply=Reply([Text("Sleeping."), sleep])),
        ]
    )


def _is_bash_call(m: Any) -> bool:
    return isinstance(m, AssistantMessage) and any(
        isinstance(b, ToolUseBlock) and b.name == "Bash" for b in m.content
    )


async def tool_interrupt_run(r: Recorder) -> None:
    await r.ask("Sleep please")
    await r.wait(lambda: r.count(AssistantMessage, _is_bash_call) >= 1, "the Bash call")
    await r.interrupt()
    await r.wait(lambda: r.count(ResultMessage) >= 1, "the interrupted result")
    await r.ask("Never mind, stop", results=2)


async def two_turns_run(r: Recorder) -> None:
    await r.ask("First question", results=1)
    await r.ask("Second question", results=2)


SCENARIOS = [
    SdkScenario("text", "One prompt, one text reply.", plain_script, text_run),
    SdkScenario("bash_tool", "Text + a Bash call (echo hello), then the reply.", bash_script, bash_run),
    SdkScenario("thinking", "A thinking block then a text block.", thinking_script, thinking_run),
    SdkScenario(
        "agent_foreground",
        "An Agent call with background tasks disabled: the subagent runs Bash and answers.",
        agent_fg_script,
        agent_fg_run,
        env={"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"},
    ),
    SdkScenario(
        "agent_background",
        "An Agent call run in the background: the first result comes after the async launch; the "
        "subagent's work, its notification and the parent's reply end with a second result.",
        agent_bg_script,
        agent_bg_run,
    ),
    SdkScenario(
        "api_error",
        "HTTP 529 with CLAUDE_CODE_MAX_RETRIES=1 (one retry, then the error), then a prompt that works.",
        api_error_script,
        api_error_run,
        env={"CLAUDE_CODE_MAX_RETRIES": "1"},
    ),
    SdkScenario(
        "interrupted",
        "interrupt() while a reply streams, then a prompt answered normally.",
        interrupted_script,
        interrupted_run,
    ),
    SdkScenario(
        "tool_interrupted",
        "interrupt() while a Bash call (sleep) runs, then a prompt answered normally.",
        tool_interrupt_script,
        tool_interrupt_run,
    ),
    SdkScenario("two_turns", "Two prompts, one text reply each.", two_turns_script, two_turns_run),
]


async def drive(sc: SdkScenario, options: ClaudeAgentOptions) -> list[dict[str, Any]]:
    client = ClaudeSDKClient(options)
    await client.connect()
    recorder = Recorder(client)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(recorder.read)
            await sc.run(recorder)
            tg.cancel_scope.cancel()
    finally:
        await client.disconnect()  # the CLI exits: its transcript is complete
    return recorder.lines


def run_scenario(sc: SdkScenario, out_dir: Path, work_root: Path, version: str) -> Path:
    session_id = session_id_for(f"sdk-{sc.name}")
    work = work_root / sc.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    script = sc.script()
    with FakeAnthropic(script) as fake:
        cenv = make_claude_env(work, fake.url, extra_env=sc.env)
        options = ClaudeAgentOptions(
            cli_path=cenv.binary,
            cwd=cenv.cwd,
            env=cenv.env,
            session_id=session_id,
            system_prompt={"type": "preset", "preset": "claude_code"},
            permission_mode="bypassPermissions",
            include_partial_messages=True,
            forward_subagent_text=True,
        )
        lines = anyio.run(drive, sc, options)
        requests = fake.requests
    unanswered = [r.index for r in requests if r.rule == "fallback"]
    if unanswered:
        raise ScenarioError(f"request(s) {unanswered} matched no rule")
    transcript = cenv.transcript_path(session_id)
    if not transcript.is_file():
        raise ScenarioError(f"no transcript at {transcript}")
    dest = out_dir / sc.name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    (dest / "stream.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    files = ["stream.jsonl", *copy_transcripts(transcript, cenv.subagents_dir(session_id), dest)]
    meta = {
        "name": sc.name,
        "description": sc.description,
        "claude_version": version,
        "session_id": session_id,
        "mode": "ClaudeSDKClient (claude_code preset, bypassPermissions, partial messages, subagent text)",
        "env": sc.env,
        "prompts": [line["text"] for line in lines if line["_class"] == "Prompt"],
        "rules": [describe_rule(r) for r in script.rules],
        "requests": [describe_request(r) for r in requests],
        "files": files,
    }
    (dest / "scenario.json").write_text(json.dumps(meta, indent=2) + "\n")
    return dest


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="fixtures folder (default: %(default)s)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this scenario")
    ap.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "happy-sdk-fixtures", help="scratch folder"
    )
    args = ap.parse_args(argv)
    names = {sc.name for sc in SCENARIOS}
    if unknown := [n for n in args.only if n not in names]:
        ap.error(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    chosen = [sc for sc in SCENARIOS if not args.only or sc.name in args.only]
    return run_all(chosen, run_scenario, args.out, args.work, summary=_stream_lines)


def _stream_lines(dest: Path) -> str:
    return f"{len((dest / 'stream.jsonl').read_text().splitlines())} stream lines"


if __name__ == "__main__":
    sys.exit(main())
