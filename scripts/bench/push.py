#!/usr/bin/env python3
"""Notifications from the bridge, measured: a permission asked (a FakeController's request,
behind its real control socket) -> the push message at a push service standing in for Expo
(`tests/support/fake_push.py`, on 127.0.0.1), through the bridge's own code in-process: the
session's watch (its agentState told to the real Happy server, built and started here, over the
account's real socket), the notifier, and the pusher of `--push-url` (the account's push tokens
read from the server, then the message posted). One request at a time, answered before the next;
p50/p90/p99 over --count."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.bridge.app.notify import ExpoPusher, Notifier
from happy_launcher.bridge.app.session_rpc import SocketControl
from happy_launcher.bridge.app.versioned import Versioned
from happy_launcher.bridge.app.watch import SessionWatch
from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.link.api import HttpHappyApi
from happy_launcher.bridge.link.updates import open_updates
from happy_launcher.control.fake import FakeController
from happy_launcher.control.views import SessionView
from happy_launcher.protocol import wall_clock_ms
from happy_launcher.session.ports import PermissionRequest
from tests.support import happy_server as peer
from tests.support.control import facts, running
from tests.support.fake_push import FakePushService
from tests.support.happy_app import HappyApp


class Quiet:
    """The account socket's handler: the bench needs none of its traffic."""

    async def connected(self) -> None:
        pass

    async def update(self, body: dict[str, Any]) -> None:
        pass

    async def ephemeral(self, body: dict[str, Any]) -> None:
        pass

    async def rpc(self, method: str, params: str) -> str | None:
        return None


async def measure(url: str, app: HappyApp, push: FakePushService, count: int) -> list[float]:
    cipher = SessionCipher("dataKey", os.urandom(32))
    api = HttpHappyApi(url, app.token)
    remote = await api.create_session("bench-push", cipher.seal({"path": "/w"}), None, None)
    await api.aclose()
    pusher = ExpoPusher(url, app.token, push.url)
    controller = FakeController(facts(mode="remote"))
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        notifier = Notifier(home, pusher)
        async with (
            open_updates(url, app.token, Quiet()) as updates,
            running(controller, home) as socket,
            anyio.create_task_group() as tg,
        ):
            view = SessionView("hs-alpha", None, "running", "remote", "/w", None, 0, None, socket)
            watch = SessionWatch(
                home,
                view,
                remote.id,
                updates,
                SocketControl(),
                wall_clock_ms,
                state=Versioned(updates, "agentState", remote.id, cipher, remote.agentStateVersion),
                metadata=Versioned(updates, "metadata", remote.id, cipher, remote.metadataVersion),
                describe=lambda running, first: {"path": "/w"},
                allowed=list,
                notify=lambda attention, local: notifier.notify(attention, local=local),
            )
            tg.start_soon(notifier.run)
            tg.start_soon(watch.run)
            for n in range(count):
                asked = time.monotonic()
                controller.request_permission(PermissionRequest(f"r{n}", "Bash", {"command": "ls"}, "ls"))
                await anyio.to_thread.run_sync(push.wait, n + 1, 30.0)
                latencies.append((push.arrivals[n] - asked) * 1000)
                controller.answer(f"r{n}", True, None)
            tg.cancel_scope.cancel()
    await pusher.aclose()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100, help="permission requests, one at a time")
    args = parser.parse_args()
    dest = peer.build()
    with tempfile.TemporaryDirectory() as data, FakePushService() as push:
        server = peer.start(dest, Path(data))
        try:
            app = HappyApp(server.url)
            registered = app.http.post(
                "/v1/push-tokens",
                json={"token": "ExponentPushToken[bench]"},
                headers=HappyApp.auth(app.token),
            )
            registered.raise_for_status()
            ms = anyio.run(measure, server.url, app, push, args.count)
        finally:
            peer.stop(server)
    cuts = statistics.quantiles(ms, n=100)
    print(
        f"permission asked -> push message at the push service, n={len(ms)}: "
        f"p50 {statistics.median(ms):.1f} ms, p90 {cuts[89]:.1f} ms, p99 {cuts[98]:.1f} ms"
        " (target p50 <= 200 ms)"
    )
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
