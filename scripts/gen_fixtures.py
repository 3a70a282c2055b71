#!/usr/bin/env python3
"""Regenerate the golden Claude Code transcripts under tests/fixtures/golden/.

Runs the REAL bundled Claude Code binary (claude-agent-sdk's ``_bundled/claude``) in its interactive TUI
under a PTY (pexpect) against the scripted fake Messages API of tests/support/fake_anthropic.py, one
scenario at a time, and copies the transcript it wrote (plus subagent transcripts) into
``<out>/<scenario>/``. Run it again after upgrading claude-agent-sdk:

    .venv/bin/python scripts/gen_fixtures.py                  # all scenarios
    .venv/bin/python scripts/gen_fixtures.py --only thinking  # one (repeatable)
    .venv/bin/python scripts/gen_fixtures.py --list

Each scenario checks what it expects to find in the transcript and fails loudly otherwise (a new Claude
version may change behaviour: then look at the transcript, adapt the scenario, and tell the mapper).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pexpect

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.claude_env import ClaudeEnv, claude_version, make_claude_env  # noqa: E402
from tests.support.fake_anthropic import (  # noqa: E402
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

DEFAULT_OUT = REPO / "tests" / "fixtures" / "golden"
SESSION_NAMESPACE = uuid.UUID("6f1d7c3e-5a2b-4c8d-9e0f-a1b2c3d4e5f6")
READY_MARKERS = ["for shortcuts", "shift+tab to cycle"]
ESC = "\x1b"

Record = dict[str, Any]
S = TypeVar("S", bound="_Named")

_ANSI = re.compile(r"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|.)")


def _squeeze(text: str) -> str:
    return "".join(_ANSI.sub("", text).split())


class ScenarioError(RuntimeError):
    pass


# --------------------------------------------------------------------------------------------------
# Driving the TUI


class Tui:
    """One interactive Claude session under a PTY, plus its transcript."""

    def __init__(self, cenv: ClaudeEnv, fake: FakeAnthropic, session_id: str, log_path: Path) -> None:
        self.cenv = cenv
        self.fake = fake
        self.session_id = session_id
        self.transcript = cenv.transcript_path(session_id)
        self._log = log_path.open("wb")
        self.prompts: list[str] = []
        self.child: Any = pexpect.spawn(
            str(cenv.binary),
            ["--session-id", session_id],
            cwd=str(cenv.cwd),
            env=cenv.env,
            dimensions=(50, 140),
            logfile=self._log,
            timeout=30,
        )
        self.seen = ""  # everything the TUI printed, decoded

    def wait_ready(self) -> None:
        self.expect_screen(READY_MARKERS, timeout=20, what="the input box")

    # -- output -----------------------------------------------------------------------------------
    def pump(self, seconds: float) -> None:
        """Read (and keep) the TUI's output for ``seconds`` so it never blocks on a full PTY."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                data = self.child.read_nonblocking(65536, timeout=min(left, 0.05))
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                return
            self.seen += data.decode("utf-8", "replace")

    def expect_screen(self, needles: Sequence[str], timeout: float, what: str, since: int = 0) -> None:
        """Wait until one of ``needles`` was printed (compared without ANSI sequences and whitespace:
        the TUI moves the cursor instead of printing spaces)."""
        squeezed = [_squeeze(n) for n in needles]
        self.wait(lambda: any(n in _squeeze(self.seen[since:]) for n in squeezed), timeout, what)

    def wait(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        """Pump output until ``cond()`` holds; fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise ScenarioError(f"timed out after {timeout}s waiting for {what}")
            if not self.child.isalive():
                raise ScenarioError(f"claude exited while waiting for {what}")
            self.pump(0.1)

    # -- transcript -------------------------------------------------------------------------------
    def records(self) -> list[Record]:
        try:
            text = self.transcript.read_text()
        except FileNotFoundError:
            return []
        out: list[Record] = []
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                break  # a line being written
        return out

    def count(self, pred: Callable[[Record], bool]) -> int:
        return sum(1 for r in self.records() if pred(r))

    def wait_records(self, pred: Callable[[Record], bool], n: int, timeout: float, what: str) -> None:
        self.wait(lambda: self.count(pred) >= n, timeout, what)

    def wait_turns(self, n: int, timeout: float = 20) -> None:
        self.wait_records(is_turn_duration, n, timeout, f"{n} turn_duration record(s)")

    # -- input ------------------------------------------------------------------------------------
    def submit(self, prompt: str) -> None:
        """Type a one-line prompt and press Enter."""
        self.prompts.append(prompt)
        mark = len(self.seen)
        self.child.send(prompt)
        self.expect_screen([prompt[-12:]], timeout=5, what="the typed prompt to show", since=mark)
        self.pump(0.1)
        self.child.send("\r")

    def press_escape(self) -> None:
        self.child.send(ESC)

    def exit(self) -> None:
        mark = len(self.seen)
        self.child.send("/exit")
        self.expect_screen(["/exit"], timeout=5, what="/exit to show", since=mark)
        self.pump(0.2)
        self.child.send("\r")
        deadline = time.monotonic() + 10
        while self.child.isalive() and time.monotonic() < deadline:
            self.pump(0.1)
        if self.child.isalive():
            self.child.sendcontrol("c")
            self.pump(0.3)
            self.child.sendcontrol("c")
            self.pump(2)
        self.child.close(force=True)
        self._log.close()
        if self.child.exitstatus not in (0, None):
            raise ScenarioError(f"claude exited with {self.child.exitstatus}")

    def kill(self) -> None:
        if self.child.isalive():
            self.child.close(force=True)
        self._log.close()


# --------------------------------------------------------------------------------------------------
# Record predicates


def is_turn_duration(r: Record) -> bool:
    return r.get("type") == "system" and r.get("subtype") == "turn_duration"


def user_texts(r: Record) -> list[str]:
    if r.get("type") != "user":
        return []
    content = (r.get("message") or {}).get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return []


def is_interrupt(r: Record) -> bool:
    return any(t.startswith("[Request interrupted by user") for t in user_texts(r))


def is_task_notification(r: Record) -> bool:
    return r.get("type") == "user" and (r.get("origin") or {}).get("kind") == "task-notification"


def is_api_error(r: Record) -> bool:
    return r.get("type") == "assistant" and r.get("isApiErrorMessage") is True


def has_tool_result(r: Record, tool_use_ids: Sequence[str]) -> bool:
    content = (r.get("message") or {}).get("content")
    return (
        r.get("type") == "user"
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("tool_use_id") in tool_use_ids for b in content)
    )


def block_types(records: list[Record]) -> list[str]:
    out = []
    for r in records:
        if r.get("type") == "assistant":
            for b in (r.get("message") or {}).get("content") or []:
                out.append(str(b.get("type")))
    return out


# --------------------------------------------------------------------------------------------------
# Scenarios


@dataclass
class Ctx:
    tui: Tui
    fake: FakeAnthropic

    def records(self) -> list[Record]:
        return self.tui.records()


@dataclass
class Scenario:
    name: str
    description: str
    script: Callable[[], Script]
    run: Callable[[Ctx], None]
    background_tasks: bool = True
    max_retries: int | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    allow_fallback: bool = False  # else a request no rule answered fails the scenario


SUB_PROMPT = "SUBAGENT-TASK: run `echo from-subagent` with Bash and report what it printed."


def agent_call() -> ToolUse:
    return ToolUse(
        "Agent",
        {"description": "Echo from a subagent", "prompt": SUB_PROMPT, "subagent_type": "general-purpose"},
    )


def agent_rules(sub_delay: float) -> list[Rule]:
    """The subagent's two steps: one Bash call, then its answer."""
    return [
        Rule(
            name="subagent: Bash",
            prompt="SUBAGENT-TASK",
            reply=Reply(
                [ToolUse("Bash", {"command": "echo from-subagent", "description": "Echo from the subagent"})],
                delay=sub_delay,
            ),
        ),
        Rule(
            name="subagent: answer",
            first_prompt="SUBAGENT-TASK",
            tool_result="Bash",
            reply=Reply([Text("The command printed: from-subagent")], delay=sub_delay),
        ),
    ]


# -- 1. plain_reply


def plain_script() -> Script:
    return Script(
        [Rule(name="reply", prompt="Say hello", reply=Reply([Text("Hello! This is a scripted reply.")]))]
    )


def plain_run(c: Ctx) -> None:
    c.tui.submit("Say hello")
    c.tui.wait_turns(1)


# -- 2. bash_tool


def bash_script() -> Script:
    return Script(
        [
            Rule(
                name="tool call",
                prompt="Run echo hello",
                reply=Reply(
                    [
                        Text("I'll run it."),
                        ToolUse("Bash", {"command": "echo hello", "description": "Print hello"}),
                    ]
                ),
            ),
            Rule(name="after Bash", tool_result="Bash", reply=Reply([Text("The command printed: hello")])),
        ]
    )


def bash_run(c: Ctx) -> None:
    c.tui.submit("Run echo hello")
    c.tui.wait_turns(1)
    ids = [i for r in c.fake.requests for i in r.tool_use_ids]
    results = [r for r in c.records() if has_tool_result(r, ids)]
    if not results or "hello" not in json.dumps(results[0].get("toolUseResult")):
        raise ScenarioError("no Bash tool result with 'hello'")


# -- 3. thinking


def thinking_script() -> Script:
    return Script(
        [
            Rule(
                name="think then answer",
                prompt="Think first",
                reply=Reply(
                    [
                        Thinking("The user wants me to think first. Two plus two is four."),
                        Text("After thinking: 2 + 2 = 4."),
                    ]
                ),
            )
        ]
    )


def thinking_run(c: Ctx) -> None:
    c.tui.submit("Think first: what is 2 + 2?")
    c.tui.wait_turns(1)
    if "thinking" not in block_types(c.records()):
        raise ScenarioError("no thinking block in the transcript")


# -- 4. agent_foreground


def agent_fg_script() -> Script:
    return Script(
        [
            Rule(name="parent: Agent", prompt="Delegate", reply=Reply([Text("Delegating."), agent_call()])),
            *agent_rules(0.0),
            Rule(
                name="parent: after Agent",
                tool_result="Agent",
                reply=Reply([Text("The subagent reported: from-subagent")]),
            ),
        ]
    )


def agent_fg_run(c: Ctx) -> None:
    c.tui.submit("Delegate the echo to a subagent")
    c.tui.wait_turns(1, timeout=25)
    check_subagent(c)


def check_subagent(c: Ctx) -> None:
    sub = c.tui.cenv.subagents_dir(c.tui.session_id)
    if not list(sub.glob("agent-*.jsonl")) or not list(sub.glob("agent-*.meta.json")):
        raise ScenarioError(f"no subagent transcript/meta in {sub}")


# -- 5. agent_background


def agent_bg_script() -> Script:
    return Script(
        [
            Rule(name="parent: Agent", prompt="Delegate", reply=Reply([Text("Delegating."), agent_call()])),
            # The subagent is slowed down so that the parent's turn ends first (as with a real model).
            *agent_rules(1.0),
            Rule(
                name="parent: after async launch",
                tool_result="Agent",
                reply=Reply([Text("A background agent is on it; I'll report when it finishes.")]),
            ),
            Rule(
                name="parent: task-notification",
                raw_prompt="<task-notification>",
                reply=Reply([Text("The background agent finished: it printed from-subagent.")]),
            ),
        ]
    )


def agent_bg_run(c: Ctx) -> None:
    c.tui.submit("Delegate the echo to a subagent")
    c.tui.wait_turns(1, timeout=20)
    c.tui.wait_records(is_task_notification, 1, 20, "the task-notification record")
    c.tui.wait_turns(2, timeout=20)
    check_subagent(c)


# -- 6. interrupted

SLOW_TEXT = " ".join(f"Counting{i}" for i in range(1, 200))


def interrupted_script() -> Script:
    return Script(
        [
            Rule(
                name="slow stream",
                prompt="Count slowly",
                reply=Reply([Text(SLOW_TEXT, chunk_size=10)], chunk_delay=0.1),
            ),
            Rule(name="after interrupt", prompt="Never mind", reply=Reply([Text("OK, stopped counting.")])),
        ]
    )


def interrupted_run(c: Ctx) -> None:
    mark = len(c.tui.seen)
    c.tui.submit("Count slowly to 200")
    c.fake.wait_until(lambda reqs: bool(reqs) and reqs[-1].events_sent >= 8, timeout=10)
    c.tui.expect_screen(["Counting3"], timeout=10, what="streamed text to show", since=mark)
    c.tui.press_escape()
    c.tui.wait_records(is_interrupt, 1, 10, "the interrupt record")
    c.tui.pump(0.5)
    c.tui.submit("Never mind, stop")
    c.tui.wait_turns(1)
    if not any(r.disconnected for r in c.fake.requests):
        raise ScenarioError("the slow stream was not hung up on")


# -- 7. api_error


def api_error_script() -> Script:
    return Script(
        [
            # First: the retry's request repeats the failed prompt (both texts in one user message).
            Rule(name="recovered", prompt="Try again", reply=Reply([Text("It works now.")])),
            Rule(name="529", prompt="This will fail", reply=ErrorReply(529, "Overloaded")),
        ]
    )


def api_error_run(c: Ctx) -> None:
    c.tui.submit("This will fail")
    c.tui.wait_records(is_api_error, 1, 20, "the API error record")
    c.tui.pump(0.5)  # no turn_duration is written for a failed turn
    c.tui.submit("Try again")
    c.tui.wait_turns(1)


# -- 8. two_turns


def two_turns_script() -> Script:
    return Script(
        [
            Rule(name="first", prompt="First question", reply=Reply([Text("First answer.")])),
            Rule(name="second", prompt="Second question", reply=Reply([Text("Second answer.")])),
        ]
    )


def two_turns_run(c: Ctx) -> None:
    c.tui.submit("First question")
    c.tui.wait_turns(1)
    c.tui.submit("Second question")
    c.tui.wait_turns(2)


SCENARIOS: list[Scenario] = [
    Scenario("plain_reply", "One prompt, one scripted text reply.", plain_script, plain_run),
    Scenario(
        "bash_tool",
        "A reply with text + a Bash tool_use (echo hello, allowed by a Bash(echo:*) rule), then the "
        "follow-up text reply after the tool result.",
        bash_script,
        bash_run,
    ),
    Scenario("thinking", "A reply with a thinking block then a text block.", thinking_script, thinking_run),
    Scenario(
        "agent_foreground",
        "An Agent tool_use (general-purpose) with CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1: the subagent "
        "runs Bash then answers; then the parent's final text.",
        agent_fg_script,
        agent_fg_run,
        background_tasks=False,
    ),
    Scenario(
        "agent_background",
        "An Agent tool_use with background tasks enabled (the default): the parent's turn ends after the "
        "async_launched result, the subagent runs Bash and answers, then a task-notification turn.",
        agent_bg_script,
        agent_bg_run,
    ),
    Scenario(
        "interrupted",
        "A slowly streamed reply interrupted with Esc mid-stream, then a second prompt answered normally.",
        interrupted_script,
        interrupted_run,
    ),
    Scenario(
        "api_error",
        "The first prompt's request answers HTTP 529 (CLAUDE_CODE_MAX_RETRIES=0): Claude writes a synthetic "
        "error record; a second prompt is then answered normally.",
        api_error_script,
        api_error_run,
        max_retries=0,
    ),
    Scenario(
        "two_turns", "Two prompts in one session, one text reply each.", two_turns_script, two_turns_run
    ),
]


# --------------------------------------------------------------------------------------------------
# Running and saving


def _jsonable(obj: Any) -> Any:
    """Scripted replies as JSON: dataclasses by kind, fields left at their default omitted."""
    if is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {"kind": type(obj).__name__}
        for f in fields(obj):
            value = getattr(obj, f.name)
            default = f.default_factory() if f.default_factory is not MISSING else f.default
            if value is not None and value != default:
                out[f.name] = _jsonable(value)
        return out
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if callable(obj):
        return getattr(obj, "__name__", "callable")
    return obj


def describe_rule(rule: Rule) -> dict[str, Any]:
    out: dict[str, Any] = {"name": rule.name}
    for key in ("prompt", "exact", "raw_prompt", "first_prompt", "tool_result", "tool_use_id", "times"):
        value = getattr(rule, key)
        if value is not None:
            out[key] = value
    out["reply"] = _jsonable(rule.reply)
    return out


def describe_request(req: RecordedRequest) -> dict[str, Any]:
    return {
        "rule": req.rule,
        "last_user_text": req.last_user_text[:300],
        "first_user_text": req.first_user_text[:120],
        "tool_results": [
            {"tool_name": t.tool_name, "tool_use_id": t.tool_use_id, "is_error": t.is_error}
            for t in req.tool_results
        ],
        "message_id": req.message_id,
        "tool_use_ids": req.tool_use_ids,
        "completed": req.completed,
        "disconnected": req.disconnected,
    }


def _copy(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    dst.chmod(0o644)


def session_id_for(name: str) -> str:
    return str(uuid.uuid5(SESSION_NAMESPACE, name))


def run_scenario(sc: Scenario, out_dir: Path, work_root: Path, version: str) -> Path:
    session_id = session_id_for(sc.name)
    work = work_root / sc.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    script = sc.script()
    started = time.monotonic()
    with FakeAnthropic(script) as fake:
        cenv = make_claude_env(
            work,
            fake.url,
            background_tasks=sc.background_tasks,
            max_retries=sc.max_retries,
            extra_env=sc.extra_env,
        )
        tui = Tui(cenv, fake, session_id, work / "pty.log")
        req_dir = work / "requests"  # for debugging a scenario: what Claude sent
        try:
            tui.wait_ready()
            sc.run(Ctx(tui, fake))
            tui.exit()
        except BaseException:
            tui.kill()
            print(f"  PTY log: {work / 'pty.log'}; requests: {req_dir}", file=sys.stderr)
            raise
        finally:
            req_dir.mkdir()
            for req in fake.all_requests:
                (req_dir / f"{req.index:03d}.json").write_text(json.dumps(req.body, indent=1))
        requests = fake.requests
    elapsed = time.monotonic() - started
    unanswered = [r.index for r in requests if r.rule == "fallback"]
    if unanswered and not sc.allow_fallback:
        raise ScenarioError(f"request(s) {unanswered} matched no rule (see {req_dir})")

    if not tui.transcript.is_file():
        raise ScenarioError(f"no transcript at {tui.transcript}")
    dest = out_dir / sc.name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    files = copy_transcripts(tui.transcript, cenv.subagents_dir(session_id), dest)
    meta = {
        "name": sc.name,
        "description": sc.description,
        "claude_version": version,
        "session_id": session_id,
        "cwd": str(cenv.cwd),
        "mode": "interactive TUI under a PTY",
        "permission_mode": "acceptEdits (+ allow Bash(echo:*))",
        "env": {
            k: v
            for k, v in cenv.env.items()
            if k.startswith(("CLAUDE_CODE_DISABLE_BACKGROUND", "CLAUDE_CODE_MAX_RETRIES"))
        },
        "prompts": tui.prompts,
        "rules": [describe_rule(r) for r in script.rules],
        "fallback": _jsonable(script.fallback),
        "requests": [describe_request(r) for r in requests],
        "files": files,
        "generated_in_seconds": round(elapsed, 1),
    }
    (dest / "scenario.json").write_text(json.dumps(meta, indent=2) + "\n")
    return dest


def copy_transcripts(transcript: Path, subagents: Path, dest: Path) -> list[str]:
    """Copy a session's transcript and its subagent files (with their meta) into `dest`, laid out
    as Claude lays them out; returns their paths relative to `dest`."""
    _copy(transcript, dest / transcript.name)
    files = [transcript.name]
    if subagents.is_dir():
        session_id = transcript.stem
        sub_dest = dest / session_id / "subagents"
        sub_dest.mkdir(parents=True)
        for f in sorted(subagents.iterdir()):
            if f.is_file() and (f.suffix == ".jsonl" or f.name.endswith(".meta.json")):
                _copy(f, sub_dest / f.name)
                files.append(f"{session_id}/subagents/{f.name}")
    return files


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="fixtures folder (default: %(default)s)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this scenario")
    ap.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "happy-golden",
        help="scratch folder: HOME, cwd and PTY logs per scenario (default: %(default)s)",
    )
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = ap.parse_args(argv)

    if args.list:
        for sc in SCENARIOS:
            print(f"{sc.name:18} {sc.description}")
        return 0
    names = {sc.name for sc in SCENARIOS}
    unknown = [n for n in args.only if n not in names]
    if unknown:
        ap.error(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    chosen = [sc for sc in SCENARIOS if not args.only or sc.name in args.only]

    return run_all(chosen, run_scenario, args.out, args.work, summary=_transcript_lines)


def _transcript_lines(dest: Path) -> str:
    lines = sum(len(p.read_text().splitlines()) for p in dest.rglob("*.jsonl"))
    return f"{lines} transcript lines"


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def run_all(
    scenarios: Sequence[S],
    run: Callable[[S, Path, Path, str], Path],
    out: Path,
    work: Path,
    *,
    summary: Callable[[Path], str],
) -> int:
    """Run each scenario into `out` (scratch files under `work`), saying how each went; 1 if
    any failed. Shared with gen_sdk_fixtures.py."""
    version = claude_version()
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    for sc in scenarios:
        print(f"== {sc.name}", flush=True)
        t0 = time.monotonic()
        try:
            dest = run(sc, out, work.resolve(), version)
        except Exception as exc:
            print(f"  FAILED: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            failed.append(sc.name)
            continue
        print(f"  ok in {time.monotonic() - t0:.1f}s: {summary(dest)} -> {dest}", flush=True)
    (out / "VERSION").write_text(version + "\n")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
