#!/usr/bin/env python3
"""The bridge to Happy's server, measured against the real server (built and started here, on
127.0.0.1) as one account, with a user-scoped Socket.IO client of the server standing for the app:

- live: an envelope committed (a FakeController's commit, as the session's commit point, behind
  its real control socket) -> the app's socket has the server's `new-message` update for it;
  one envelope at a time, p50/p99 over --count;
- burst: --burst envelopes committed at once -> all of them on the app's socket: envelopes/s;
- catch-up: an ended session of --catchup envelopes in the store, never sent -> all on the
  server (the store's mark at its last seq);
- idle: the real daemon (`happy daemon start`), connected with one ended session: its CPU time
  over --idle seconds, and its resident memory.

Sessions out runs in-process for the first three (the daemon's own code, `sessions_out`, over
the real HTTP client); the fourth is the daemon process itself."""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.bridge.keys.credentials import Credentials, write_credentials
from happy_launcher.bridge.keys.crypto import content_keypair
from happy_launcher.bridge.link.api import HttpHappyApi
from happy_launcher.bridge.link.fake_api import FakeHappyApi
from happy_launcher.bridge.out.sessions_out import sessions_out
from happy_launcher.control.fake import FakeController
from happy_launcher.home.procs import this_process
from happy_launcher.protocol import EnvelopeFactory, SequentialIds
from happy_launcher.store.sessions import SessionStore
from tests.support import happy_server as peer
from tests.support.control import facts, running
from tests.support.happy_app import HappyApp
from tests.support.happy_tui import happy_executable


class AppSocket:
    """The app's view: the time each envelope id (localId) arrived in a `new-message` update."""

    def __init__(self) -> None:
        import socketio

        self.client = socketio.AsyncClient(reconnection=False)
        self.arrived: dict[str, float] = {}
        self._waiting: tuple[set[str], anyio.Event] | None = None
        self.client.on("update", self._update)

    async def _update(self, data: Any) -> None:
        message = data.get("body", {}).get("message", {})
        local_id = message.get("localId") if isinstance(message, dict) else None
        if isinstance(local_id, str):
            self.arrived[local_id] = time.perf_counter()
            if self._waiting is not None and self._waiting[0] <= self.arrived.keys():
                self._waiting[1].set()

    async def until(self, ids: set[str]) -> None:
        if ids <= self.arrived.keys():
            return
        done = anyio.Event()
        self._waiting = (ids, done)
        with anyio.fail_after(120):
            await done.wait()


def envelopes(factory: EnvelopeFactory, count: int, offset: int = 0) -> list[Any]:
    text = "a typical message of a sentence or two, number {}"
    return [factory.user_text(text.format(n), 1_700_000_000_000 + n) for n in range(offset, offset + count)]


async def in_process(url: str, app: HappyApp, credentials: Credentials, args: argparse.Namespace) -> str:
    factory = EnvelopeFactory(SequentialIds("bench"))
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        with SessionStore.open(home) as store:  # an ended session, never sent
            store.create_session("hs-live", cwd="/w", started_at=1, owner=this_process(os.getpid()))
            store.create_session("hs-ended", cwd="/w", started_at=1)
            ended = envelopes(factory, args.catchup, 10**6)
            for first in range(0, len(ended), 1000):
                store.append_envelopes("hs-ended", ended[first : first + 1000])
            store.end_session("hs-ended", "completed", 2)
        socket = AppSocket()
        auth = {"token": app.token, "clientType": "user-scoped"}
        await socket.client.connect(url, auth=auth, transports=["websocket"], socketio_path="v1/updates")
        controller = FakeController(facts(happy_session_id="hs-live", pid=os.getpid()))
        api = HttpHappyApi(url, credentials.token)
        async with running(controller, home), anyio.create_task_group() as tg:
            began = time.perf_counter()
            tg.start_soon(partial(sessions_out, home, url, credentials, "bench-machine", api, poll=0.05))
            await socket.until({e.id for e in ended})
            catchup = time.perf_counter() - began
            live = []
            for envelope in envelopes(factory, args.count):
                start = time.perf_counter()
                controller.commit([envelope])
                await socket.until({envelope.id})
                live.append((socket.arrived[envelope.id] - start) * 1000)
            burst = envelopes(factory, args.burst, 2 * 10**6)
            began = time.perf_counter()
            controller.commit(burst)
            await socket.until({e.id for e in burst})
            rate = args.burst / (time.perf_counter() - began)
            tg.cancel_scope.cancel()
        await socket.client.disconnect()
        await api.aclose()
    q = statistics.quantiles(live, n=100)
    return (
        f"live: committed -> the app's socket has it, n={args.count}: p50 {statistics.median(live):.1f} ms, "
        f"p99 {q[98]:.1f} ms (targets 30 / 100 ms)\n"
        f"burst: {args.burst} envelopes at once: {rate:,.0f} envelopes/s (target >= 2,000)\n"
        f"catch-up: {args.catchup} envelopes of an ended session: {catchup:.1f} s (target <= 10 s)"
    )


async def server_ceiling(url: str, token: str, count: int) -> str:
    """The server's own pace, without the bridge: posts of 1 and of 100 ready messages."""
    api = HttpHappyApi(url, token)
    remote = await api.create_session("bench-raw", "bWV0YQ==", None, None)
    content = "eA==" * 100
    singles = []
    for n in range(20):
        start = time.perf_counter()
        await api.post_messages(remote.id, [(f"one-{n}", content)])
        singles.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    for first in range(0, count, 100):
        await api.post_messages(remote.id, [(f"many-{n}", content) for n in range(first, first + 100)])
    rate = count / (time.perf_counter() - start)
    await api.aclose()
    return (
        f"the server alone: one message posted p50 {statistics.median(singles):.1f} ms (n=20); "
        f"{count} in posts of 100: {rate:,.0f} messages/s"
    )


async def bridge_alone(credentials: Credentials, count: int) -> str:
    """The bridge's own pace: sessions out over the in-memory server (no network, no database)."""
    factory = EnvelopeFactory(SequentialIds("alone"))
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        with SessionStore.open(home) as store:
            store.create_session("hs-ended", cwd="/w", started_at=1)
            ended = envelopes(factory, count)
            for first in range(0, len(ended), 1000):
                store.append_envelopes("hs-ended", ended[first : first + 1000])
            store.end_session("hs-ended", "completed", 2)
        api = FakeHappyApi()
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(sessions_out, home, api.url, credentials, "m", api, env={}, poll=0.05))
            while "hs-ended" not in api.sessions or len(api.sessions["hs-ended"].rows) < count:
                await api.posted.wait()
            tg.cancel_scope.cancel()
        rate = count / (time.perf_counter() - start)
    return f"the bridge alone (in-memory server): {count} stored envelopes out at {rate:,.0f} envelopes/s"


def idle_daemon(url: str, credentials: Credentials, seconds: float) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        write_credentials(home, credentials)
        env = {**os.environ, "HAPPY_HOME_DIR": str(home), "HAPPY_SERVER_URL": url}
        happy = happy_executable()
        started = subprocess.run(
            [happy, "daemon", "start"], env=env, capture_output=True, text=True, check=True
        )
        pid = int(started.stdout.split("(pid ")[1].split(")")[0])
        try:
            tick = os.sysconf("SC_CLK_TCK")

            def cpu() -> float:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / tick

            log = home / "daemon.log"
            deadline = time.monotonic() + 60
            while f"connected to {url}" not in log.read_text():  # its socket is up: all is loaded
                if time.monotonic() > deadline:
                    raise SystemExit(f"the daemon's socket never connected: see {log}")
                time.sleep(0.1)
            time.sleep(2)  # settled (the machine registered, the first keepalive sent)
            before = cpu()
            time.sleep(seconds)  # what is measured: the daemon doing nothing for this long
            used = cpu() - before
            rss = next(
                int(line.split()[1])
                for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if line.startswith("VmRSS:")
            )
        finally:
            subprocess.run([happy, "daemon", "stop"], env=env, capture_output=True, check=False)
    return (
        f"idle: the daemon over {seconds:.0f} s: {used * 1000:.0f} ms of CPU ({used / seconds:.2%}), "
        f"resident memory {rss / 1024:.0f} MB (target <= 60 MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200, help="live envelopes, one at a time")
    parser.add_argument("--burst", type=int, default=5000)
    parser.add_argument("--catchup", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of the daemon at rest")
    args = parser.parse_args()
    dest = peer.build()
    with tempfile.TemporaryDirectory() as data:
        server = peer.start(dest, Path(data))
        try:
            app = HappyApp(server.url)
            public = content_keypair(app.secret).public
            credentials = Credentials(
                app.token, "dataKey", content_public=public, machine_key=secrets.token_bytes(32)
            )
            print(anyio.run(in_process, server.url, app, credentials, args))
            print(anyio.run(server_ceiling, server.url, app.token, args.burst))
            print(anyio.run(bridge_alone, credentials, args.catchup))
            print(idle_daemon(server.url, credentials, args.idle))
        finally:
            peer.stop(server)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
