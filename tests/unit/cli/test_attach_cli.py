"""`happy attach` refusing, as a user runs it (in a terminal, or not): one line, the documented
exit code, before anything is stopped. The sessions are control servers over FakeControllers."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pexpect
import pytest

from happy_launcher.control.fake import FakeController
from happy_launcher.home.procs import this_process
from tests.support.control import facts, running
from tests.unit.cli.test_control_cli import HAPPY, env, happy, one_error_line, store_session

pytestmark = pytest.mark.anyio


def in_a_terminal(home: Path, *args: str) -> tuple[int, str]:
    """`happy attach ARGS` on a PTY: its exit code and what it printed."""
    child = pexpect.spawn(HAPPY, ["attach", *args], env=env(home), timeout=20)
    output = child.read().decode()
    child.close()
    return int(child.exitstatus), output


async def test_without_a_terminal_here_it_is_a_usage_error(tmp_path: Path) -> None:
    done = await happy(tmp_path, "attach")
    assert done.returncode == 2
    one_error_line(done, "happy attach opens Claude's TUI: run it in a terminal")


async def test_no_session_without_a_terminal_is_one_line(tmp_path: Path) -> None:
    code, output = await anyio.to_thread.run_sync(in_a_terminal, tmp_path)
    assert (code, output) == (1, "happy: no session runs without a terminal: `happy sessions` lists them\r\n")


async def test_a_session_in_a_terminal_is_left_alone(tmp_path: Path) -> None:
    store_session(tmp_path, "hs-alpha", this_process(os.getpid()))
    controller = FakeController(facts(mode="local", terminal=True))
    async with running(controller, tmp_path):
        code, output = await anyio.to_thread.run_sync(in_a_terminal, tmp_path, "hs-alpha")
    assert code == 1
    assert output == (
        f"happy: session hs-alpha runs in a terminal already (pid {os.getpid()}): use it there, "
        "or `happy switch` it\r\n"
    )
