"""The soak test's driver: one `happy claude` session (the real bundled Claude under a PTY,
against the suite's fake Messages API) and what a run expects of it.

Every step waits on something it can observe, with a bound: the screen (the TUI's input box,
the remote screen's idle hint), the store (a prompt's `user` text followed by a `turn-end`),
the control socket's `status` (mode, busy), the fake API's request log (a slow reply streaming),
a process gone (pidfd). A wait that times out raises `StepFailed`, which ends the run's actions.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from happy_launcher.control.client import connect
from happy_launcher.control.wire import Facts
from happy_launcher.errors import ControlError
from happy_launcher.home.dirs import socket_path
from happy_launcher.remote.screen_view import IDLE_HINT
from happy_launcher.store.sessions import SessionStore
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, Rule, Script, Text, ToolUse
from tests.support.happy_tui import READY_MARKERS, HappyTui, happy_executable, squeeze, wait_pid_gone
from tests.support.soak_check import Exit, stored_sessions, user_blocks, user_text

SLOW_WORD = "slow"  # in a prompt: the fake answers slowly (a turn to abort or to stop mid-way)
SLOW_REPLY = " ".join(f"word{n}" for n in range(40))
TOOL_WORD = "tool"
BIG_WORD = "big"
BIG_REPLY = " ".join(f"big{n:05d}" for n in range(5000))
TURN_TIMEOUT = 60.0  # a prompt -> its turn-end in the store (a switch, a resume, a slow machine)
GONE_TIMEOUT = 20.0  # a process we ended -> gone


class StepFailed(Exception):
    """A step's observable event did not come within its bound."""


@dataclass(frozen=True)
class Message:
    """A message the run expects the model to see exactly once."""

    text: str
    via: str  # "typed", "send", "inject"
    step: int


def soak_script() -> Script:
    """Echo every prompt. A prompt holding SLOW_WORD gets a reply streamed over ~14 s; TOOL_WORD,
    a Bash call (allowed by the test settings) then a reply; BIG_WORD, a 45 KB reply (the
    transcript's last 32 KiB then hold no `mode` record: issue 16 item 1's second trigger)."""
    ran = Rule(Reply([Text("Ran it.")]), tool_result="Bash")
    call = ToolUse("Bash", {"command": "echo soak", "description": "Echo"})
    tool = Rule(Reply([Text("Running."), call]), prompt=TOOL_WORD)
    big = Rule(Reply([Text(BIG_REPLY, chunk_size=2000)]), prompt=BIG_WORD)
    slow = Rule(Reply([Text(SLOW_REPLY, chunk_size=6)], chunk_delay=0.3), prompt=SLOW_WORD)
    return Script([ran, tool, big, slow], fallback=lambda req: Reply([Text("Echo: " + req.last_user_text)]))


def descendants(pid: int) -> set[int]:
    """`pid`'s children, theirs, ... (every thread's children: a process a thread spawned counts)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{parent}/task").iterdir():
                kids = {int(p) for p in (task / "children").read_text().split()} - found
                found |= kids
                todo.extend(kids)
    return found


class Driver:
    """The running happy (if any), its mode, and everything the final checks need."""

    def __init__(self, cenv: ClaudeEnv, home: Path, fake: FakeAnthropic) -> None:
        self.cenv, self.home, self.fake = cenv, home, fake
        self.env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
        self.tui: HappyTui | None = None
        self.mode = "local"
        self.claude_id: str | None = None
        self.happy_id: str | None = None
        self.messages: list[Message] = []
        self.exits: list[Exit] = []
        self.pids: set[int] = set()  # every happy and Claude seen: none may outlive the run
        self.notes: list[str] = []  # what went wrong without ending the run
        self.step = 0  # the action under way (for the notes)
        self.runs = 0

    # -- happy's processes ------------------------------------------------------------------------

    @property
    def t(self) -> HappyTui:
        if self.tui is None:
            raise StepFailed("happy is not running")
        return self.tui

    def start(self, *args: str) -> None:
        self.runs += 1
        events = self.home / f"events-{self.runs}.jsonl"
        self.tui = HappyTui(self.cenv, self.home, args, events=events, wrap_stty=True, env={"TERM": "xterm"})
        self.front_ready(None, 0)  # the TUI; or the remote screen, to deliver what is pending
        self.remember_pids()
        self.settled()

    def remember_pids(self) -> None:
        pid = self.happy_pid() if self.tui is not None else None
        if pid is not None:
            self.pids |= {pid, *descendants(pid)}

    def ended(self, how: str, timeout: float = 20) -> int:
        """happy has been told to end (`how`): wait for it, record its exit, wait for its children."""
        t = self.t
        pid = self.happy_pid()
        children = descendants(pid) if pid is not None else set()
        try:
            code = t.wait_exit(timeout)
        except AssertionError as exc:
            raise StepFailed(f"happy did not exit within {timeout} s after {how}") from exc
        self.tui = None
        self.exits.append(Exit(how, code, t.stty_before, t.stty_after))
        if how != "kill -9" and pid is not None:
            self.left_behind(pid, how)
        for pid in children:
            if not wait_pid_gone(pid, GONE_TIMEOUT):
                self.note(f"pid {pid} outlived happy ({how}) by {GONE_TIMEOUT} s: killed")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        return code

    def note(self, text: str) -> None:
        self.notes.append(f"step {self.step}: {text}")

    def left_behind(self, pid: int, how: str) -> None:
        """After an exit happy could clean up after: its socket removed, its session ended."""
        if socket_path(self.home, pid).exists():
            self.note(f"happy ({how}) left its control socket behind")
        with SessionStore.open(self.home) as store:
            running = [s for s in store.session_summaries() if s.owner is not None and s.owner.pid == pid]
        if any(s.info.status == "running" for s in running):
            self.note(f"happy ({how}) left its session `running`")

    def happy_pid(self) -> int | None:
        """The happy process, while it runs (the wrapper shell has it as its only child)."""
        try:
            return self.t.happy_pid()
        except (AssertionError, OSError):  # no child, or the wrapper shell itself gone
            return None

    def signal(self, sig: signal.Signals) -> None:
        self.remember_pids()
        pid = self.happy_pid()
        if pid is None:
            raise StepFailed(f"happy was gone before {sig.name}")
        os.kill(pid, sig)

    def close(self) -> None:
        """Teardown after a failure: end what is still ours."""
        if self.tui is not None:
            self.tui.kill()
            self.tui = None

    # -- observing --------------------------------------------------------------------------------

    def facts(self) -> Facts | None:
        """The control socket's `status` of the running happy (None while it does not answer)."""
        path = socket_path(self.home, self.t.happy_pid())

        async def ask() -> Facts:
            # Bounded: happy may be blocked writing to its terminal, which only the caller drains.
            with anyio.fail_after(1):
                async with connect(path) as client:
                    return (await client.status()).session

        try:
            return anyio.run(ask)
        except (ControlError, OSError, TimeoutError):  # not there yet, gone, or busy: the wait goes on
            return None

    def settled(self, timeout: float = 30) -> Facts:
        """Wait until happy is idle on a known Claude session; its facts (mode noted)."""
        got: list[Facts] = []

        def idle() -> bool:
            facts = self.facts()
            if facts is None or facts.busy:
                return False
            got.append(facts)
            return True

        self.wait(idle, timeout, "happy idle (control status)")
        facts = got[-1]
        self.mode = facts.mode
        self.claude_id = self.same("Claude", self.claude_id, facts.claude_session_id)
        self.happy_id = self.same("happy", self.happy_id, facts.happy_session_id)
        return facts

    def same(self, which: str, known: str | None, now: str | None) -> str | None:
        """One session id for the whole run: a change is noted where it happens (a split)."""
        if known is not None and now not in (None, known):
            self.note(f"the {which} session id changed: {known} -> {now}")
        return now or known

    def wait(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        try:
            self.t.wait(cond, timeout, what)
        except AssertionError as exc:
            first, _, screen = str(exc).partition("\n--- screen tail:\n")
            raise StepFailed(f"{first} (screen: ...{screen[-300:]})" if screen else first) from exc

    def front_ready(self, mode: str | None, since: int, timeout: float = 30) -> None:
        """The front end of `mode` (None: either) drew its idle input (the TUI's input box, the
        remote screen's idle hint) after `since`."""
        wanted = {"local": READY_MARKERS, "remote": (IDLE_HINT,), None: (*READY_MARKERS, IDLE_HINT)}[mode]
        markers = [squeeze(m) for m in wanted]
        t = self.t
        self.wait(
            lambda: any(m in squeeze(t.seen[since:]) for m in markers), timeout, f"the {mode} front end"
        )

    def answered(self, text: str) -> bool:
        """The store holds `text` as a user text with a turn-end after it (the turn is over)."""
        for envelopes in stored_sessions(self.home).values():
            at = next((i for i, (_, e) in enumerate(envelopes) if user_text(e) == text), None)
            if at is not None and any(e["ev"]["t"] == "turn-end" for _, e in envelopes[at:]):
                return True
        return False

    def turn_status(self, text: str) -> str | None:
        for envelopes in stored_sessions(self.home).values():
            at = next((i for i, (_, e) in enumerate(envelopes) if user_text(e) == text), None)
            if at is not None:
                ends = [e["ev"]["status"] for _, e in envelopes[at:] if e["ev"]["t"] == "turn-end"]
                return ends[0] if ends else None
        return None

    def wait_answered(self, text: str, timeout: float = TURN_TIMEOUT) -> None:
        self.wait(lambda: self.answered(text), timeout, f"{text!r} answered (its turn-end in the store)")

    def resumable(self) -> bool:
        """Claude has a transcript for the session (before the first prompt it has none)."""
        return self.claude_id is not None and self.cenv.transcript_path(self.claude_id).exists()

    def pending(self) -> list[Message]:
        return [m for m in self.messages if not self.answered(m.text)]

    def streaming(self, text: str) -> bool:
        """The fake is streaming (a few events out) the reply to the request that asks `text`."""
        reqs: Sequence[RecordedRequest] = self.fake.requests
        return any(text in user_blocks(r) and r.events_sent >= 5 for r in reqs)

    # -- acting -----------------------------------------------------------------------------------

    def verb(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A `happy` verb run by another process, as a user's other terminal would. happy's
        terminal is drained meanwhile: a full PTY would block happy, and the verb with it."""
        with subprocess.Popen(
            [happy_executable(), *args],
            env=self.env,
            cwd=self.cenv.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            try:
                if self.tui is not None:
                    self.tui.poll(lambda: proc.poll() is not None, timeout)
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                proc.kill()
                raise StepFailed(f"`happy {' '.join(args)}` did not answer within {timeout} s") from exc
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def expect(self, text: str, via: str, step: int) -> None:
        self.messages.append(Message(text, via, step))

    def type_prompt(self, text: str, step: int) -> None:
        """Type a prompt into the front end at hand (the TUI's box or the remote screen's line)."""
        try:
            self.t.submit(text)
        except AssertionError as exc:
            raise StepFailed(f"typing {text!r}: {str(exc).splitlines()[0]}") from exc
        self.expect(text, "typed", step)

    def send(self, text: str, message_id: str, step: int, *flags: str) -> None:
        done = self.verb("send", "--id", message_id, *flags, text)
        if done.returncode != 0:
            raise StepFailed(
                f"happy send {' '.join(flags)} refused (exit {done.returncode}): {done.stderr.strip()}"
            )
        if all(m.text != text for m in self.messages):
            self.expect(text, "inject" if "--inject" in flags else "send", step)

    def exit_cleanly(self) -> None:
        """/exit in the TUI, Ctrl-C twice in the remote screen; then wait for the exit."""
        if self.mode == "local":
            self.t.type("/exit")
            self.t.child.send("\r")
        else:
            self.t.child.send("\x03")
            self.t.child.send("\x03")
        self.ended("exit")
