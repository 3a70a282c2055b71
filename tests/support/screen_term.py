"""The user's terminal for the remote screen's PTY tests: a shell on a pexpect PTY that runs
tests/support/screen_driver.py once, between two `stty -g` (the settings before and after).

The test feeds the screen through a FIFO (`put`, `envelopes`) and reads what the screen asked of
the fake session from its log (`calls`). Waits drain the PTY until a condition holds, with a
bound; nothing sleeps.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pexpect

from happy_launcher.protocol import Envelope
from tests.support.happy_tui import squeeze

REPO = Path(__file__).resolve().parents[2]
DRIVER = [sys.executable, "-m", "tests.support.screen_driver"]
READY = "remote · happy hsession0001"  # the status line: the screen is up
TIMEOUT = 10
_BEFORE = re.compile(r"BEFORE (\S+)\r\n")
_AFTER = re.compile(r"RC=(\d+) AFTER (\S+)\r\n")


class ScreenTerm:
    def __init__(self, tmp: Path, *, dimensions: tuple[int, int] = (30, 100)) -> None:
        feed = tmp / "feed"
        os.mkfifo(feed)
        # Read-write: opening never blocks, and the driver's read end never sees end of file.
        self._feed = os.open(feed, os.O_RDWR)
        self.log = tmp / "actions.jsonl"
        inner = shlex.join([*DRIVER, str(feed), str(self.log)])
        script = f'echo "BEFORE $(stty -g)"; {inner}; echo "RC=$? AFTER $(stty -g)"'
        env = {**os.environ, "TERM": "xterm-256color"}
        self.proc: Any = pexpect.spawn(
            "/bin/sh", ["-c", script], cwd=str(REPO), env=env, dimensions=dimensions
        )
        self.raw = bytearray()
        self.seen = ""
        self.wait(lambda: _BEFORE.search(self.seen) is not None, "the BEFORE stty line")
        match = _BEFORE.search(self.seen)
        assert match is not None
        self.stty_before = match.group(1)
        self.screen_start = match.end()

    # -- feeding the screen ----------------------------------------------------------------------

    def put(self, **item: Any) -> None:
        os.write(self._feed, orjson.dumps(item) + b"\n")

    def envelopes(self, *envelopes: Envelope) -> None:
        self.put(envelopes=[e.to_dict() for e in envelopes])

    # -- waiting ---------------------------------------------------------------------------------

    def wait(self, cond: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                tail = squeeze(self.seen[-2000:])[-800:]
                raise AssertionError(f"timed out waiting for {what}\n--- screen tail:\n{tail}")
            try:
                data = self.proc.read_nonblocking(65536, timeout=0.05)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                if not cond():
                    raise AssertionError(f"the terminal closed while waiting for {what}") from None
                return
            self.raw += data
            self.seen += data.decode("utf-8", "replace")

    def expect_screen(self, text: str, since: int = 0) -> None:
        want = squeeze(text)
        self.wait(lambda: want in squeeze(self.seen[since:]), f"{text!r} on screen")

    def mark(self) -> int:
        return len(self.seen)

    def ready(self) -> None:
        self.expect_screen(READY)

    def log_lines(self) -> list[dict[str, Any]]:
        try:
            data = self.log.read_bytes()
        except FileNotFoundError:
            return []
        return [orjson.loads(line) for line in data.splitlines()]

    def calls(self) -> list[dict[str, Any]]:
        return [entry for entry in self.log_lines() if "call" in entry]

    def wait_calls(self, count: int) -> list[dict[str, Any]]:
        self.wait(lambda: len(self.calls()) >= count, f"{count} call(s) to the session")
        return self.calls()

    def pid(self) -> int:
        self.wait(lambda: bool(self.log_lines()), "the driver's pid")
        return int(self.log_lines()[0]["pid"])

    def finish(self) -> tuple[int, dict[str, Any]]:
        """Wait for the driver to end; check the terminal's settings came back. (Exit code, how
        the screen ended.)"""
        self.wait(lambda: _AFTER.search(self.seen) is not None, "the driver to exit")
        match = _AFTER.search(self.seen)
        assert match is not None
        self.screen_end = match.start()
        self.close()
        assert match.group(2) == self.stty_before, "terminal settings not restored"
        ends = [entry for entry in self.log_lines() if "end" in entry]
        return int(match.group(1)), (ends[-1] if ends else {})

    def close(self) -> None:
        if self.proc.isalive():
            self.proc.close(force=True)
        if self._feed >= 0:
            os.close(self._feed)
            self._feed = -1
