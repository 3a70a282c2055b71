"""The store is the bridge's outbox, through the real daemon process: a `happy claude` session
(remote mode, the real Claude against the fake API) runs on while Happy's server is stopped and
restarted, and while the bridge is killed -9 and started again; after each, the server's history
of the session, decrypted, is the store's envelopes (same ids, same order, none twice), and a
message the app sent while the bridge was down is delivered once. A session resumed with
`--resume` continues the same Happy session."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.bridge.process.daemon import read_pid_file
from happy_launcher.store.sessions import SessionStore
from tests.support import happy_server as peer
from tests.support.bridge_procs import stop_bridges
from tests.support.claude_env import ClaudeEnv
from tests.support.control import wait_for_file
from tests.support.happy_account import HappyAccount, until
from tests.support.happy_sync import server_and_store
from tests.support.happy_tui import happy_executable, wait_pid_gone

pytestmark = pytest.mark.timeout(300)
HAPPY = happy_executable()
BOUND = 60.0  # seconds any phase may take (a restarted server is found within the retry's cap)
PHONE = "hello from the phone"


class Remote:
    """`happy claude --happy-remote` fed prompts on stdin; its stdout read by a thread, line by line."""

    def __init__(self, cenv: ClaudeEnv, home: Path, url: str, *args: str) -> None:
        env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
        env["HAPPY_SERVER_URL"] = url
        self.proc = subprocess.Popen(
            [HAPPY, "claude", "--happy-remote", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cenv.cwd,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def ask(self, prompt: str) -> None:
        """Send a prompt and wait for Claude's reply on stdout."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(prompt.encode() + b"\n")
        self.proc.stdin.flush()
        while (line := self.lines.get(timeout=BOUND)) != f"Echo: {prompt}\n".encode():
            assert line, f"happy claude ended before answering {prompt!r}"

    def end(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=BOUND)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server(happy_peer: Path, tmp_path: Path) -> Iterator[list[peer.HappyServer]]:
    """This test's own server (it stops and restarts it): the one running is the last."""
    servers = [peer.start(happy_peer, tmp_path / "server-data")]
    yield servers
    peer.discard(servers[-1])


def texts(envelopes: list[Any]) -> list[str]:
    return [e["ev"]["text"] for e in envelopes if e["ev"]["t"] == "text"]


def in_sync(account: HappyAccount, home: Path, url: str, reply: str) -> list[Any]:
    """The one session's envelopes once the server holds exactly the store's, `reply` among them."""

    def check() -> list[Any] | None:
        held, store = server_and_store(home, url, account.app.token)
        [envelopes] = store.values()
        return envelopes if held == store and reply in texts(envelopes) else None

    return until(check, BOUND, f"the server's history equal to the store's, with {reply!r}")


def test_nothing_lost_nor_twice_across_a_server_outage_and_a_killed_bridge(
    happy_peer: Path, server: list[peer.HappyServer], cenv: ClaudeEnv, home: Path, tmp_path: Path
) -> None:
    url = server[0].url
    port = int(url.rsplit(":", 1)[1])
    account = HappyAccount(happy_peer, server[0], tmp_path)
    account.log_in(home)
    remote = Remote(cenv, home, url)
    try:
        remote.ask("before the outage")  # `happy claude` started the bridge itself
        wait_for_file(home / "daemon.pid", BOUND)
        in_sync(account, home, url, "Echo: before the outage")

        peer.stop(server[0])  # (a) the server goes away mid-session, and comes back on its data
        remote.ask("while the server is down")
        server.append(peer.start(happy_peer, server[0].data, port))
        in_sync(account, home, url, "Echo: while the server is down")

        bridge = read_pid_file(home)  # (b) the bridge killed -9, and started again
        assert bridge is not None
        os.kill(bridge.pid, signal.SIGKILL)
        assert wait_pid_gone(bridge.pid, BOUND)
        remote.ask("while the bridge is down")
        with SessionStore.open(home) as store:
            [session] = store.list_sessions()
            link = store.happy_link(session.id, url)
        assert link is not None
        account.agent("send", link.happy_id, PHONE)  # the same url: the restarted server
        env = {**os.environ, "HAPPY_HOME_DIR": str(home), "HAPPY_SERVER_URL": url}
        started = subprocess.run([HAPPY, "daemon", "start"], env=env, capture_output=True, timeout=BOUND)
        assert started.returncode == 0, started.stderr
        in_sync(account, home, url, f"Echo: {PHONE}")
        assert remote.end() == 0
    finally:
        remote.kill()
    envelopes = in_sync(account, home, url, f"Echo: {PHONE}")  # the run's last envelopes too
    ids = [e["id"] for e in envelopes]
    assert len(ids) == len(set(ids))
    said = texts(envelopes)
    for prompt in ("before the outage", "while the server is down", "while the bridge is down", PHONE):
        assert (said.count(prompt), said.count(f"Echo: {prompt}")) == (1, 1)
    restarted = read_pid_file(home)
    assert restarted is not None and restarted.pid != bridge.pid
    assert stop_bridges(home) == [restarted.pid]  # the only bridge: the one started again


def claude_p(cenv: ClaudeEnv, home: Path, url: str, *args: str) -> None:
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    env["HAPPY_SERVER_URL"] = url
    done = subprocess.run(
        [HAPPY, "claude", *args],
        env=env,
        cwd=cenv.cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_a_resumed_session_continues_its_happy_session(
    happy_peer: Path, happy_server: peer.HappyServer, cenv: ClaudeEnv, home: Path, tmp_path: Path
) -> None:
    url = happy_server.url
    account = HappyAccount(happy_peer, happy_server, tmp_path)
    account.log_in(home)

    def listed() -> list[str]:
        out = account.agent("list", "--json")
        return [session["id"] for session in json.loads(out)]

    claude_p(cenv, home, url, "-p", "first")
    in_sync(account, home, url, "Echo: first")
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
        first = store.happy_link(session.id, url)
    assert first is not None and session.claude_session_id is not None
    assert listed() == [first.happy_id]

    claude_p(cenv, home, url, "--resume", session.claude_session_id, "-p", "second")
    envelopes = in_sync(account, home, url, "Echo: second")
    assert texts(envelopes) == ["first", "Echo: first", "second", "Echo: second"]
    with SessionStore.open(home) as store:
        assert [s.id for s in store.list_sessions()] == [session.id]
        again = store.happy_link(session.id, url)
    assert again is not None and (again.happy_id, again.key) == (first.happy_id, first.key)
    assert listed() == [first.happy_id]
