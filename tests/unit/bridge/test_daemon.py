"""The bridge's pid file and stop, over real (small) child processes: a pid file names a process
by pid and start time, so a reused pid or a dead bridge is not taken for a running one; stop ends
it with SIGTERM, or SIGKILL when SIGTERM is not enough, and removes a stale pid file. And
`happy claude`'s check: not logged in, it costs no import; logged in with a bridge running, it
starts none."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from happy_launcher.bridge.process.daemon import (
    LOG_FILE,
    PID_FILE,
    read_pid_file,
    remove_pid_file,
    running,
    start_detached,
    stop,
    write_pid_file,
)
from happy_launcher.home.procs import ProcessId, this_process

pytestmark = pytest.mark.timeout(20)

# Says it is ready (its handler is set) once it runs, then waits to be ended.
WAITING = "import signal, sys\n{}\nprint('up', flush=True)\nwhile True:\n    signal.pause()\n"
DEAF = "signal.signal(signal.SIGTERM, signal.SIG_IGN)"


@pytest.fixture
def child() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", WAITING.format("")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    yield proc
    proc.kill()
    proc.wait()


def test_the_pid_file_names_a_process_by_pid_and_start_time(
    tmp_path: Path, child: subprocess.Popen[str]
) -> None:
    owner = this_process(child.pid)
    assert owner.start is not None
    write_pid_file(tmp_path, owner)
    assert (tmp_path / PID_FILE).stat().st_mode & 0o777 == 0o600
    assert read_pid_file(tmp_path) == owner
    assert running(tmp_path) == owner


def test_a_reused_pid_is_not_the_bridge(tmp_path: Path, child: subprocess.Popen[str]) -> None:
    owner = this_process(child.pid)
    assert owner.start is not None
    write_pid_file(tmp_path, ProcessId(child.pid, owner.start - 1))  # another process once had the pid
    assert running(tmp_path) is None
    assert stop(tmp_path) is None
    assert child.poll() is None  # not signalled
    assert not (tmp_path / PID_FILE).exists()


def test_a_dead_bridge_leaves_a_stale_pid_file_that_stop_removes(tmp_path: Path) -> None:
    write_pid_file(tmp_path, ProcessId(2**22 + 1, 1))  # above any pid_max: no such process
    assert running(tmp_path) is None
    assert stop(tmp_path) is None
    assert not (tmp_path / PID_FILE).exists()


@pytest.mark.parametrize("text", ["", "garbage", "[]", '{"pid": "1", "start": 2}', '{"pid": 1}'])
def test_a_damaged_pid_file_names_no_one(tmp_path: Path, text: str) -> None:
    (tmp_path / PID_FILE).write_text(text)
    assert read_pid_file(tmp_path) is None
    assert running(tmp_path) is None


def test_a_pid_file_is_removed_only_by_its_owner(tmp_path: Path) -> None:
    write_pid_file(tmp_path, ProcessId(10, 20))
    remove_pid_file(tmp_path, ProcessId(10, 21))
    assert read_pid_file(tmp_path) == ProcessId(10, 20)
    remove_pid_file(tmp_path, ProcessId(10, 20))
    assert not (tmp_path / PID_FILE).exists()


def test_stop_ends_the_bridge_with_sigterm(tmp_path: Path, child: subprocess.Popen[str]) -> None:
    write_pid_file(tmp_path, this_process(child.pid))
    assert stop(tmp_path, bound=10) == child.pid
    assert child.wait(timeout=5) == -15
    assert not (tmp_path / PID_FILE).exists()


def test_stop_kills_a_bridge_that_ignores_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", WAITING.format(DEAF)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        write_pid_file(tmp_path, this_process(proc.pid))
        assert stop(tmp_path, bound=0.2) == proc.pid
        assert proc.wait(timeout=5) == -9
    finally:
        proc.kill()
        proc.wait()


def test_a_running_bridge_is_not_started_again(tmp_path: Path, child: subprocess.Popen[str]) -> None:
    write_pid_file(tmp_path, this_process(child.pid))
    assert start_detached(tmp_path, {}) is None
    assert not (tmp_path / LOG_FILE).exists()  # nothing was spawned


def test_happy_claude_not_logged_in_costs_no_import(tmp_path: Path) -> None:
    """The check `happy claude` makes before Claude starts: a stat of access.key, nothing loaded."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from happy_launcher.cli.claude_cmd import start_bridge\n"
        "before = set(sys.modules)\n"
        f"start_bridge(Path({str(tmp_path)!r}), {{}})\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout == "[]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []
