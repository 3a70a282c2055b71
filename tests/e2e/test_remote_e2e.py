"""Remote mode end to end: the real bundled Claude driven through the real Agent SDK (the Python
API, `happy_launcher.open_session`) against the suite's fake Messages API.

Every scenario also checks the invariant of design §4: the envelopes committed live equal (up to
ids and times) what `happy replay` makes of the transcript that run wrote. One mapper, two feeds.
"""

from __future__ import annotations

import io
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson
import pexpect
import pytest

import happy_launcher
from happy_launcher.protocol import Envelope, SequentialIds, ToolCallEndEv, TurnEndEv
from happy_launcher.remote.remote_session import RemoteSession
from happy_launcher.session.ports import PermissionAnswer, PermissionRequest
from happy_launcher.session.replay import replay_file
from happy_launcher.store.sessions import SessionStore
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import (
    ErrorReply,
    FakeAnthropic,
    RecordedRequest,
    Reply,
    Rule,
    Script,
    Text,
    Thinking,
    ToolUse,
)
from tests.support.happy_tui import happy_executable

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.timeout(90)]

SUB_PROMPT = "SUBAGENT-TASK: run `echo from-subagent` with Bash and report what it printed."


def echo(req: RecordedRequest) -> Reply:
    if "SLOW" in req.last_user_text:  # long enough to be interrupted mid-stream
        return Reply([Text(" ".join(f"word{i}" for i in range(400)))], chunk_delay=0.05, chunk_size=8)
    return Reply([Text("Echo: " + req.last_user_text)])


def agent_call(background: bool) -> ToolUse:
    return ToolUse(
        "Agent",
        {
            "description": "Echo from a subagent",
            "prompt": SUB_PROMPT,
            "subagent_type": "general-purpose",
            "run_in_background": background,
        },
    )


def rules() -> list[Rule]:
    bash = ToolUse("Bash", {"command": "echo hi > written.txt", "description": "Write a file"})
    return [
        Rule(name="bash", prompt="use bash", reply=Reply([Text("Running it."), bash])),
        Rule(name="after bash", tool_result="Bash", first_prompt="use bash", reply=Reply([Text("Done.")])),
        Rule(
            name="sleep",
            prompt="use sleep",
            reply=Reply([Text("Sleeping."), ToolUse("Bash", {"command": "sleep 20; echo slept"})]),
        ),
        Rule(name="think", prompt="think", reply=Reply([Thinking("Pondering."), Text("Thought it over.")])),
        Rule(name="overloaded", prompt="overload", reply=ErrorReply(529)),
        Rule(name="fg", prompt="Delegate now", reply=Reply([Text("Delegating."), agent_call(False)])),
        Rule(name="bg", prompt="Delegate later", reply=Reply([Text("Delegating."), agent_call(True)])),
        Rule(
            name="sub bash",
            prompt="SUBAGENT-TASK",
            # Slower than the parent's next reply, as with a real model: a background agent's
            # work lands after the parent's turn (replay orders files, not their interleaving).
            reply=Reply(
                [ToolUse("Bash", {"command": "echo from-subagent", "description": "Echo"})], delay=1.0
            ),
        ),
        Rule(
            name="sub answer",
            first_prompt="SUBAGENT-TASK",
            tool_result="Bash",
            reply=Reply([Text("The command printed: from-subagent")], delay=0.5),
        ),
        Rule(name="after agent", tool_result="Agent", reply=Reply([Text("The subagent is done or on it.")])),
        Rule(
            name="notified",
            raw_prompt="<task-notification>",
            reply=Reply([Text("Background agent finished.")]),
        ),
    ]


@pytest.fixture
def script() -> Script:
    return Script(rules(), fallback=echo)


@pytest.fixture
def claude_options() -> dict[str, Any]:
    return {"permission_mode": "default", "allow": (), "max_retries": 1}


def options(cenv: ClaudeEnv, home: Path, **more: Any) -> dict[str, Any]:
    env = {**cenv.env, "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    return {"cwd": cenv.cwd, "env": env, "home": home, **more}


def shape(envelopes: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Envelopes up to ids and times: turn and subagent ids by order of first appearance."""
    names: dict[str, str] = {}

    def name(value: str | None, prefix: str) -> str | None:
        return None if value is None else names.setdefault(value, f"{prefix}{len(names)}")

    out = []
    for env in envelopes:
        ev = {k: v for k, v in env["ev"].items() if k not in ("call",)}
        out.append(
            (
                env["role"],
                name(env.get("turn"), "turn"),
                name(env.get("subagent"), "sub"),
                orjson.dumps(ev, option=orjson.OPT_SORT_KEYS),
            )
        )
    return out


def stored(home: Path, session_id: str) -> list[dict[str, Any]]:
    with SessionStore.open(home) as store:
        return [orjson.loads(body) for _, body in store.raw_envelopes(session_id)]


def replayed(cenv: ClaudeEnv, claude_session_id: str) -> list[dict[str, Any]]:
    out = io.BytesIO()
    replay_file(cenv.transcript_path(claude_session_id), SequentialIds("replay"), out)
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


def kinds(envelopes: list[Envelope]) -> list[str]:
    """Event types, with the status of a turn's end and of a tool call's end that did not succeed."""
    return [
        f"{e.ev.t}:{e.ev.status}" if isinstance(e.ev, TurnEndEv | ToolCallEndEv) and e.ev.status else e.ev.t
        for e in envelopes
    ]


async def turn(session: RemoteSession, text: str) -> list[Envelope]:
    with anyio.fail_after(45):
        return [e async for e in session.send(text)]


def assert_live_equals_replay(cenv: ClaudeEnv, home: Path, happy_id: str, claude_id: str) -> None:
    assert shape(stored(home, happy_id)) == shape(replayed(cenv, claude_id))


async def test_text_turn_live_equals_replay(cenv: ClaudeEnv, home: Path, fake: FakeAnthropic) -> None:
    async with happy_launcher.open_session(**options(cenv, home)) as s:
        envelopes = await turn(s, "hello remote")
        happy_id, claude_id = s.happy_session_id, s.claude_session_id
    assert kinds(envelopes) == ["text", "turn-start", "text", "turn-end:completed"]
    assert envelopes[0].role == "user" and getattr(envelopes[2].ev, "text", None) == "Echo: hello remote"
    system = fake.requests[-1].system_text
    assert "Claude Code" in system and len(system) > 1000  # the claude_code preset, not the SDK's bare prompt
    assert [e.id for e in envelopes] == [e["id"] for e in stored(home, happy_id)]
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


def test_run_one_shot(cenv: ClaudeEnv, home: Path) -> None:
    envelopes = happy_launcher.run("hello once", **options(cenv, home))
    assert kinds(envelopes) == ["text", "turn-start", "text", "turn-end:completed"]


class Answering:
    """A permission listener that answers every request at once with `answer`."""

    def __init__(self, session: RemoteSession, answer: PermissionAnswer) -> None:
        self.session, self.answer, self.seen = session, answer, list[PermissionRequest]()

    def requested(self, request: PermissionRequest) -> None:
        self.seen.append(request)
        assert self.session.answer(request.id, self.answer)
        assert not self.session.answer(request.id, PermissionAnswer(True))  # first answer wins

    def settled(self, request_id: str, answer: PermissionAnswer | None) -> None:
        pass


@pytest.mark.parametrize(
    ("answer", "ends", "tool_ends"),
    [
        (PermissionAnswer(True), "completed", "tool-call-end"),
        (PermissionAnswer(False, "not today"), "completed", "tool-call-end:denied"),
        # deny and stop the turn
        (PermissionAnswer(False, "stop here", stop=True), "cancelled", "tool-call-end:cancelled"),
    ],
    ids=["allow", "deny", "deny-and-stop"],
)
async def test_permission_answers(
    cenv: ClaudeEnv, home: Path, answer: PermissionAnswer, ends: str, tool_ends: str
) -> None:
    async with happy_launcher.open_session(**options(cenv, home)) as s:
        answering = Answering(s, answer)
        s.permissions.listen(answering)
        envelopes = await turn(s, "use bash please")
        happy_id, claude_id = s.happy_session_id, s.claude_session_id
    [request] = answering.seen
    assert request.tool == "Bash" and request.title == "Write a file"
    assert (cenv.cwd / "written.txt").exists() == answer.allow
    assert kinds(envelopes)[-1] == f"turn-end:{ends}"
    assert "tool-call-start" in kinds(envelopes) and tool_ends in kinds(envelopes)
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


async def test_permission_timeout_denies(cenv: ClaudeEnv, home: Path) -> None:
    async with happy_launcher.open_session(**options(cenv, home, permission_timeout=0.2)) as s:
        envelopes = await turn(s, "use bash please")
    assert not (cenv.cwd / "written.txt").exists()
    assert kinds(envelopes)[-1] == "turn-end:completed"


async def test_interrupt_mid_stream_then_next_prompt(cenv: ClaudeEnv, home: Path) -> None:
    async with happy_launcher.open_session(**options(cenv, home)) as s:
        got: list[Envelope] = []

        async def first() -> None:
            async for envelope in s.send("SLOW please"):
                got.append(envelope)
                if envelope.ev.t == "turn-start":
                    await s.interrupt()

        with anyio.fail_after(30):
            await first()
        after = await turn(s, "hello again")
        happy_id, claude_id = s.happy_session_id, s.claude_session_id
    assert kinds(got)[-1] == "turn-end:cancelled"
    assert kinds(after) == ["text", "turn-start", "text", "turn-end:completed"]
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


async def test_interrupt_mid_tool_ends_the_tool_then_the_turn(cenv: ClaudeEnv, home: Path) -> None:
    async with happy_launcher.open_session(**options(cenv, home, permission_mode="bypassPermissions")) as s:
        got: list[Envelope] = []
        with anyio.fail_after(30):
            async for envelope in s.send("use sleep now"):
                got.append(envelope)
                if envelope.ev.t == "tool-call-start":
                    await s.interrupt()
        after = await turn(s, "hello after the tool")
        happy_id, claude_id = s.happy_session_id, s.claude_session_id
    ends = kinds(got)
    assert ends[-1] == "turn-end:cancelled"
    assert ends.index("tool-call-end:cancelled") < ends.index("turn-end:cancelled")  # the tool's end first
    assert kinds(after)[-1] == "turn-end:completed"
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


async def test_background_subagent_live_equals_replay(cenv: ClaudeEnv, home: Path) -> None:
    async with happy_launcher.open_session(**options(cenv, home, permission_mode="bypassPermissions")) as s:
        async with s.committed() as committed:
            first = await turn(s, "Delegate later")
            with anyio.fail_after(45):  # the agent works on after the turn; its stop ends it
                async for envelope in committed:
                    if envelope.ev.t == "stop":
                        break
            await s.wait_idle()  # the notification's own turn (Claude's second result)
        happy_id, claude_id = s.happy_session_id, s.claude_session_id
    assert kinds(first)[-1] == "turn-end:completed"
    everything = stored(home, happy_id)
    assert [e["ev"]["t"] for e in everything].count("start") == 1
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


async def test_api_error_fails_the_turn_with_a_message(cenv: ClaudeEnv, home: Path) -> None:
    async with happy_launcher.open_session(**options(cenv, home)) as s:
        envelopes = await turn(s, "overload me")
        happy_id, claude_id = s.happy_session_id, s.claude_session_id
    assert kinds(envelopes)[-1] == "turn-end:failed"
    services = [e.ev.text for e in envelopes if e.ev.t == "service"]
    assert services and "529" in services[0]
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


async def test_thinking_and_foreground_subagent(cenv: ClaudeEnv, home: Path) -> None:
    async with happy_launcher.open_session(**options(cenv, home, permission_mode="bypassPermissions")) as s:
        thought = await turn(s, "think hard")
        delegated = await turn(s, "Delegate now")
        happy_id, claude_id = s.happy_session_id, s.claude_session_id
    assert any(getattr(e.ev, "thinking", False) for e in thought)
    starts = [e for e in delegated if e.ev.t == "start"]
    assert len(starts) == 1 and starts[0].subagent is not None
    assert kinds(delegated)[-1] == "turn-end:completed"
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


async def test_resume_continues_a_local_session(cenv: ClaudeEnv, home: Path) -> None:
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [happy_executable(), "claude", "-p", "first local"], env=env, cwd=cenv.cwd
        )
    assert done.returncode == 0, done.stderr
    with SessionStore.open(home) as store:
        [local] = store.list_sessions()
    before = stored(home, local.id)
    assert local.claude_session_id is not None
    async with happy_launcher.open_session(**options(cenv, home, resume=local.claude_session_id)) as s:
        envelopes = await turn(s, "then remote")
        assert s.happy_session_id == local.id and s.claude_session_id == local.claude_session_id
    after = stored(home, local.id)
    assert after[: len(before)] == before and [e["id"] for e in after[len(before) :]] == [
        e.id for e in envelopes
    ]
    assert kinds(envelopes) == ["text", "turn-start", "text", "turn-end:completed"]
    assert list(cenv.project_dir.glob("*.jsonl")) == [cenv.transcript_path(local.claude_session_id)]
    assert_live_equals_replay(cenv, home, local.id, local.claude_session_id)


def test_cli_remote_without_a_terminal_reads_prompts_from_stdin(cenv: ClaudeEnv, home: Path) -> None:
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    done = subprocess.run(
        [happy_executable(), "claude", "--happy-remote", "--allowedTools=Read", "hello one"],
        input=b"hello two\n",
        env=env,
        cwd=cenv.cwd,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"Echo: hello one\nEcho: hello two\n"
    assert done.stderr == b""  # not the SDK's advice on our permission callback, nor anything else
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
    assert session.status == "completed" and session.claude_session_id is not None
    envelopes = stored(home, session.id)
    assert [e["ev"].get("status") for e in envelopes if e["ev"]["t"] == "turn-end"] == ["completed"] * 2
    assert_live_equals_replay(cenv, home, session.id, session.claude_session_id)


def test_cli_remote_screen_in_a_terminal(cenv: ClaudeEnv, home: Path) -> None:
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary), "TERM": "xterm"}
    shell = f"stty -g; {happy_executable()} claude --happy-remote; echo rc=$?; stty -g"
    child = pexpect.spawn("sh", ["-c", shell], cwd=str(cenv.cwd), env=env, dimensions=(30, 100), timeout=45)
    try:
        child.expect(r"([0-9a-f:]+)\r\n")
        before = child.match.group(1)
        child.expect("remote")  # the status line
        child.send("hello screen\r")
        child.expect("Echo: hello screen")
        child.expect("Turn completed")  # idle again: Ctrl-C no longer interrupts
        child.send("\x03")
        child.send("\x03")  # Ctrl-C twice when idle: exit
        child.expect(r"rc=(\d+)\r\n")
        assert child.match.group(1) == b"0"
        child.expect(r"([0-9a-f:]+)\r\n")
        assert child.match.group(1) == before  # the terminal is as it was
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
    assert session.status == "completed"


def test_the_readme_python_api_example_runs(cenv: ClaudeEnv, home: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in readme.split("```python\n")[1:]]
    [example] = [b for b in blocks if "happy_launcher.open_session(" in b]
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    done = subprocess.run(
        [sys.executable, "-c", example], env=env, cwd=cenv.cwd, capture_output=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    out = done.stdout.decode()
    assert "Echo: summarise README.md" in out and "Echo: hello" in out
    with SessionStore.open(home) as store:
        assert len(store.list_sessions()) == 2  # the API's runs are in the store like the CLI's


def test_cli_remote_without_a_terminal_ends_on_sigterm(cenv: ClaudeEnv, home: Path) -> None:
    """No screen listens for signals here: the run takes SIGTERM, stops remote mode and ends the
    session, and happy exits 143 (issue 16 §2a)."""
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    run = subprocess.Popen(
        [happy_executable(), "claude", "--happy-remote", "hello one"],
        stdin=subprocess.PIPE,  # kept open: more prompts could come
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cenv.cwd,
    )
    try:
        assert run.stdout is not None
        assert run.stdout.readline() == b"Echo: hello one\n"  # idle now, waiting for stdin
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=15)
    finally:
        run.kill()
    assert run.returncode == 143, err
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
    assert session.status == "cancelled"
    assert list((home / "control").glob("*.sock")) == []
