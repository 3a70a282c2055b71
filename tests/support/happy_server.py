"""The real Happy server (`../shared/peers/happy`): built once into a cache directory, started on
a free 127.0.0.1 port with its own data directory, stopped by its process group.

Missing Node or npm is an error that says so, not a skip: these tests are the evidence that we
speak Happy's protocol."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEERS_ENV = "HAPPY_TEST_PEERS"  # another checkout of shared/peers/happy (a worktree has no ../shared)
CACHE_ENV = "HAPPY_TEST_PEER_CACHE"  # where the built server lives (default: the user's cache)
SETUP_TIMEOUT = 600  # seconds: a cold build is ~60 s with the npm registry at hand
START_TIMEOUT = 90


@dataclass(frozen=True)
class HappyServer:
    url: str
    pid: int
    data: Path


def peers_dir() -> Path:
    peers = Path(os.environ.get(PEERS_ENV) or REPO.parent / "shared" / "peers" / "happy")
    if not (peers / "setup").is_file():
        raise RuntimeError(f"no Happy peer at {peers}: check out shared/ beside the repo, or set {PEERS_ENV}")
    return peers


def build() -> Path:
    """The built server (and happy-agent); `setup` returns at once when the cache is current."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(f"the real Happy server needs {' and '.join(missing)} (Node >= 20) on PATH")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    dest = Path(os.environ.get(CACHE_ENV) or cache / "happy_launcher" / "happy-peer")
    dest.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [peers_dir() / "setup", dest], capture_output=True, text=True, timeout=SETUP_TIMEOUT, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"building the Happy server failed:\n{done.stderr}")
    return dest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(dest: Path, data: Path, port: int | None = None) -> HappyServer:
    """`port`: to restart a stopped server where its clients expect it (default: a free one)."""
    port = port or free_port()
    done = subprocess.run(
        [peers_dir() / "start", dest, str(port), data],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the Happy server did not start:\n{done.stderr}")
    return HappyServer(url=f"http://127.0.0.1:{port}", pid=int(done.stdout.split()[-1]), data=data)


def stop(server: HappyServer) -> None:
    subprocess.run([peers_dir() / "stop", str(server.pid)], timeout=30, check=False)


def discard(server: HappyServer) -> None:
    """Stop a server whose data no test reads again: its process group killed at once (`stop`
    first waits 3 s on the server's graceful shutdown, which hangs)."""
    try:
        handle = os.pidfd_open(server.pid)
    except ProcessLookupError:
        return
    try:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        select.select([handle], [], [], 10)
    finally:
        os.close(handle)


def agent(dest: Path, server: HappyServer, home: Path, *args: str) -> str:
    """Run Happy's own client, happy-agent, as the account whose agent.key is in `home`; its stdout."""
    env = {**os.environ, "HAPPY_SERVER_URL": server.url, "HAPPY_HOME_DIR": str(home)}
    done = subprocess.run(
        [peers_dir() / "agent", dest, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"happy-agent {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout
