"""The control socket's file: modes, stale sockets, long paths, and other users kept out."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from happy_launcher.control.client import connect
from happy_launcher.control.fake import FakeController
from happy_launcher.errors import RequestRefusedError
from happy_launcher.home.dirs import socket_path
from tests.support.control import facts, running

pytestmark = pytest.mark.anyio
DEAD_PID = 4_194_304 + 7  # above the kernel's pid_max: never a live process


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


async def test_modes_are_private_and_the_socket_goes_at_the_end(tmp_path: Path) -> None:
    async with running(FakeController(facts()), tmp_path) as path:
        assert path == socket_path(tmp_path, os.getpid())
        assert stat.S_ISSOCK(path.lstat().st_mode) and mode(path) == 0o600
        assert mode(path.parent) == 0o700
    assert not path.exists()


async def test_stale_sockets_are_replaced_and_swept(tmp_path: Path) -> None:
    control = tmp_path / "control"
    control.mkdir(mode=0o755)
    for pid in (os.getpid(), DEAD_PID):  # a leftover with our pid, and a dead launcher's
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(socket_path(tmp_path, pid)))
    async with running(FakeController(facts()), tmp_path) as path, connect(path) as client:
        assert (await client.hello()).session.pid == os.getpid()
        assert not socket_path(tmp_path, DEAD_PID).exists() and mode(control) == 0o700


async def test_a_home_deeper_than_a_socket_address_allows(tmp_path: Path) -> None:
    home = tmp_path / ("d" * 60) / ("e" * 60)
    assert len(os.fsencode(socket_path(home, os.getpid()))) > 107
    async with running(FakeController(facts()), home) as path, connect(path) as client:
        assert path.parent == home / "control" and stat.S_ISSOCK(path.lstat().st_mode)
        assert (await client.status()).session.happy_session_id == "hs-alpha"


async def test_a_peer_of_another_uid_is_refused(tmp_path: Path) -> None:
    controller = FakeController(facts())
    async with running(controller, tmp_path, allowed_uid=os.getuid() + 1) as path, connect(path) as client:
        with pytest.raises(RequestRefusedError, match=f"uid {os.getuid()} may not control"):
            await client.send("m", "hello")
    assert not controller.sent


@pytest.fixture
def shared_home() -> Iterator[Path]:
    """A home that another user could reach, but for the modes happy gives its control files."""
    top = Path(tempfile.mkdtemp(prefix="happy-uid-", dir="/tmp"))
    top.chmod(0o755)
    try:
        yield top
    finally:
        shutil.rmtree(top)


NOBODY_CONNECT = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except PermissionError:
    print("denied")
else:
    print("connected")
"""


def connect_as_nobody(path: Path) -> str:
    done = subprocess.run(
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            sys.executable,
            "-c",
            NOBODY_CONNECT,
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a child as nobody")
async def test_another_user_cannot_connect_at_all(shared_home: Path) -> None:
    async with running(FakeController(facts()), shared_home) as path:
        assert connect_as_nobody(path) == "denied"  # the 0700 directory
        path.parent.chmod(0o755)
        assert connect_as_nobody(path) == "denied"  # and the 0600 socket on its own
