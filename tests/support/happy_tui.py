"""Drive `happy claude` (the real product, with the real bundled Claude) under a PTY for tests.

Waits are bounded and event-driven: on screen output (compared without ANSI sequences and
whitespace, since the TUI moves the cursor instead of printing spaces) or on the envelopes in
the `--happy-events` file, read while the PTY output is drained.

``terminal_replies`` answers terminal queries (e.g. the kitty keyboard flags query ``CSI ? u``) the way
a real terminal would, so the TUI switches on what it would switch on there.

With ``wrap_stty=True`` happy runs inside ``sh -c 'echo BEFORE $(stty -g); happy …; echo RC=$? AFTER
$(stty -g)'`` on the pexpect PTY (the "user's terminal"), so a test can compare the terminal settings
from before and after the run: the same shell, on the same terminal, prints both.

With ``shell=True`` happy is typed at the prompt of an interactive ``bash`` (job control: Ctrl-Z, ``jobs``,
``fg``), whose prompt line is ``RC=$? AFTER $(stty -g)`` followed by ``$ ``.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shlex
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pexpect

from happy_launcher.protocol import parse_envelope
from tests.support.claude_env import ClaudeEnv

READY_MARKERS = ("for shortcuts", "shift+tab to cycle")
_ANSI = re.compile(r"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|.)")
_STTY_BEFORE = re.compile(r"BEFORE (\S+)\r?\n")
_STTY_AFTER = re.compile(r"RC=(\d+) AFTER (\S+)\r?\n")
SHELL_ENV = {"PS1": "$ ", "PROMPT_COMMAND": 'echo "RC=$? AFTER $(stty -g)"', "HISTFILE": "/dev/null"}

Envelope = dict[str, Any]


def squeeze(text: str) -> str:
    return "".join(_ANSI.sub("", text).split())


def happy_executable() -> str:
    return str(Path(sys.executable).with_name("happy"))


class HappyTui:
    def __init__(
        self,
        cenv: ClaudeEnv,
        home: Path,
        args: Sequence[str] = (),
        *,
        events: Path | None = None,
        env: dict[str, str] | None = None,
        dimensions: tuple[int, int] = (40, 120),
        wrap_stty: bool = False,
        shell: bool = False,
        terminal_replies: Mapping[bytes, bytes] | None = None,
        command: Sequence[str] | None = None,
    ) -> None:
        """`command`: happy's arguments instead of `claude --happy-events EVENTS ARGS` (`attach`)."""
        self.cenv = cenv
        self.home = home
        self.events_path = events or home / "events.jsonl"
        self.env = {
            **cenv.env,
            "HAPPY_HOME_DIR": str(home),
            "HAPPY_CLAUDE_PATH": str(cenv.binary),
            **(env or {}),
        }
        argv = (
            list(command)
            if command is not None
            else ["claude", "--happy-events", str(self.events_path), *args]
        )
        self.log = (home / "tui.log").open("ab")
        self.wrapped = wrap_stty or shell
        self.shell = shell
        self._prompt_mark = 0  # shell mode: where to look for the next prompt line
        self.stty_before: str | None = None
        self.stty_after: str | None = None
        self._exit_code: int | None = None
        self._pids: set[int] = set()  # happy and Claude, once seen: killed on teardown if still there
        self.seen = ""
        self.raw = bytearray()  # every byte the terminal received, undecoded
        # Answers to the terminal queries a TUI sends (query -> reply), as a real terminal would give.
        self.replies = dict(terminal_replies or {})
        spawn_env = self.env
        if shell:
            command, cmd_args = "/bin/bash", ["--norc", "--noprofile", "-i"]
            spawn_env = {**self.env, **SHELL_ENV}
        elif wrap_stty:
            inner = shlex.join([happy_executable(), *argv])
            script = f'echo "BEFORE $(stty -g)"; {inner}; echo "RC=$? AFTER $(stty -g)"'
            command, cmd_args = "/bin/sh", ["-c", script]
        else:
            command, cmd_args = happy_executable(), argv
        self.child: Any = pexpect.spawn(
            command,
            cmd_args,
            cwd=str(cenv.cwd),
            env=spawn_env,
            dimensions=dimensions,
            logfile=self.log,
            timeout=30,
        )
        if shell:
            self.stty_before = self.next_prompt()[1]
            self.child.sendline(shlex.join([happy_executable(), *argv]))
        elif wrap_stty:
            self.wait(lambda: _STTY_BEFORE.search(self.seen) is not None, 10, "the BEFORE stty line")
            match = _STTY_BEFORE.search(self.seen)
            assert match is not None
            self.stty_before = match.group(1)

    # -- waiting ------------------------------------------------------------------------------------

    def poll(self, cond: Callable[[], bool], timeout: float) -> bool:
        """Drain the PTY until `cond()` holds (True) or `timeout` seconds passed (False)."""
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                return False
            if not self._read(0.05) and not self.child.isalive():
                return cond()
        return True

    def wait(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        """Drain the PTY until `cond()` holds; fail after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {what}\n--- screen tail:\n"
                    f"{squeeze(self.seen[-3000:])[-1500:]}"
                )
            if not self._read(0.05) and not self.child.isalive() and not cond():
                raise AssertionError(f"happy exited while waiting for {what}")

    def _read(self, timeout: float) -> bool:
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        start = len(self.raw)
        self.raw += data
        self.seen += data.decode("utf-8", "replace")
        for query, reply in self.replies.items():
            # Occurrences that end in the new bytes (a query may straddle two reads).
            for _ in range(self.raw.count(query, max(0, start - len(query) + 1))):
                self.child.send(reply)
        return True

    def expect_screen(self, needle: str, timeout: float = 20, since: int = 0) -> None:
        want = squeeze(needle)
        self.wait(lambda: want in squeeze(self.seen[since:]), timeout, f"{needle!r} on screen")

    def on_screen(self, needle: str, since: int = 0) -> bool:
        return squeeze(needle) in squeeze(self.seen[since:])

    def wait_ready(self) -> None:
        markers = [squeeze(m) for m in READY_MARKERS]
        self.wait(lambda: any(m in squeeze(self.seen) for m in markers), 30, "the input box")
        # Remember the pids now, so teardown can end them even if happy dies first.
        self._pids.add(self.happy_pid())
        with contextlib.suppress(AssertionError, OSError):
            self._pids.add(self.claude_pid())

    def events(self) -> list[Envelope]:
        try:
            data = self.events_path.read_bytes()
        except FileNotFoundError:
            return []
        return [checked_envelope(line) for line in data.splitlines() if line.endswith(b"}")]

    def wait_events(
        self, pred: Callable[[list[Envelope]], bool], timeout: float = 30, what: str = ""
    ) -> None:
        self.wait(lambda: pred(self.events()), timeout, what or "envelopes")

    def wait_turn_end(self, count: int = 1, timeout: float = 30) -> None:
        self.wait_events(
            lambda evs: sum(e["ev"]["t"] == "turn-end" for e in evs) >= count, timeout, f"{count} turn-end(s)"
        )

    # -- input --------------------------------------------------------------------------------------

    def type(self, text: str, *, echo: str | None = None) -> None:
        """Type `text` (no Enter) and wait until its tail (or `echo`) shows on screen."""
        mark = len(self.seen)
        self.child.send(text)
        self.expect_screen(echo if echo is not None else text[-12:], timeout=10, since=mark)

    def submit(self, prompt: str) -> None:
        self.type(prompt)
        self.child.send("\r")

    def exit(self, timeout: float = 20) -> int:
        self.type("/exit")
        self.child.send("\r")
        return self.wait_exit(timeout)

    def next_prompt(self, timeout: float = 10) -> tuple[int, str]:
        """Shell mode: wait for the shell's next prompt; (`$?`, `stty -g`) it printed."""
        self.wait(lambda: _STTY_AFTER.search(self.seen, self._prompt_mark) is not None, timeout, "a prompt")
        match = _STTY_AFTER.search(self.seen, self._prompt_mark)
        assert match is not None
        self._prompt_mark = match.end()
        return int(match.group(1)), match.group(2)

    def shell_line(self, line: str, timeout: float = 10) -> str:
        """Shell mode: type `line` at the prompt; what it printed before the next prompt."""
        start = self._prompt_mark = len(self.seen)
        self.child.sendline(line)
        self.next_prompt(timeout)
        return self.seen[start : self._prompt_mark].rsplit("RC=", 1)[0]

    def wait_exit(self, timeout: float = 20) -> int:
        """Wait for happy to end; its exit code (shell-style: 128+N when killed by signal N)."""
        if self.shell:
            self._exit_code, self.stty_after = self.next_prompt(timeout)
            self.child.sendline("exit")
        elif self.wrapped:
            self.wait(lambda: _STTY_AFTER.search(self.seen) is not None, timeout, "happy to exit")
            match = _STTY_AFTER.search(self.seen)
            assert match is not None
            self._exit_code, self.stty_after = int(match.group(1)), match.group(2)
        self.wait(lambda: not self.child.isalive(), timeout, "the terminal's process to exit")
        while self._read(0.01) and self.child.isalive():
            pass
        self.child.close()
        self.log.close()
        if self._exit_code is not None:
            return self._exit_code
        status = self.child.exitstatus
        return int(status if status is not None else 128 + self.child.signalstatus)

    def kill(self) -> None:
        """Teardown: end the terminal and anything of ours still running (by pid)."""
        if self.child.isalive():
            self.child.close(force=True)
        deadline = time.monotonic() + 5
        for pid in sorted(self._pids):
            # A hung-up happy stops Claude itself; whatever is still there afterwards is killed.
            if not wait_pid_gone(pid, max(0.0, deadline - time.monotonic())):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if not self.log.closed:
            self.log.close()

    # -- processes ----------------------------------------------------------------------------------

    def happy_pid(self) -> int:
        """The pid of the happy process (the terminal's process itself, or the wrapper shell's child)."""
        if not self.wrapped:
            return int(self.child.pid)
        children = _children(self.child.pid)
        assert len(children) == 1, children
        return children[0]

    def front_pid(self) -> int:
        """happy's one child: the TUI's PTY session leader (local mode) or the SDK's Claude (remote)."""
        [front] = _children(self.happy_pid())
        self._pids.add(front)
        return front

    def claude_pid(self) -> int:
        """The pid of the Claude process (the child of happy's PTY session leader)."""
        leader = _children(self.happy_pid())
        assert len(leader) == 1, leader
        self._pids.add(leader[0])
        children = _children(leader[0])
        assert len(children) == 1, children
        self._pids.add(children[0])
        return children[0]


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def checked_envelope(line: bytes) -> Envelope:
    """An envelope happy wrote, as plain JSON, after checking it against the protocol's
    validating model (happy makes its envelopes without validating them)."""
    parse_envelope(line)
    envelope: Envelope = orjson.loads(line)
    return envelope


def kinds(envelopes: list[Envelope]) -> list[tuple[str, str]]:
    return [(e["role"], e["ev"]["t"]) for e in envelopes]


def wait_pid_gone(pid: int, timeout: float) -> bool:
    """Wait (on a pidfd, no polling) until `pid` has exited; False if it is still running after `timeout`.
    A zombie counts as gone: it runs no more, and only its parent can reap it."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        deadline = time.monotonic() + timeout
        while getpid_alive(pid):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([fd], [], [], min(left, 0.2))  # readable once the process has exited
        return True
    finally:
        os.close(fd)


def getpid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
