"""Notifications from the bridge (bridge/app/notify.py): once per event across a restart, none
while the user is at the terminal, a slow push service never holding up the watch, bounded
retries, and the two real pushers' requests (Happy's server's push-event; Expo's format to the
configured address, the account's token never sent there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from happy_launcher.bridge.app.fake_pusher import FakePusher
from happy_launcher.bridge.app.notify import (
    Notifier,
    PushSettings,
    configure_push,
    pusher_for,
    read_push_settings,
)
from happy_launcher.control.attention import Attention
from happy_launcher.errors import DaemonError

pytestmark = pytest.mark.anyio
ASKED = Attention("permission", "srv-1", "r1", "Permission request", "fix it", "r1", "Bash")
FAILED = Attention("failed", "srv-1", "t1", "It failed", "fix it")


async def drained(notifier: Notifier, pusher: FakePusher, count: int) -> None:
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(notifier.run)
            await pusher.until_pushed(count)
            tg.cancel_scope.cancel()


async def test_an_event_is_pushed_once_even_after_a_restart(tmp_path: Path) -> None:
    pusher = FakePusher()
    notifier = Notifier(tmp_path, pusher)
    notifier.notify(ASKED, local=False)
    notifier.notify(ASKED, local=False)  # the request told again (a reconnection)
    await drained(notifier, pusher, 1)
    restarted = Notifier(tmp_path, pusher)  # a new bridge sees the open request again
    restarted.notify(ASKED, local=False)
    restarted.notify(FAILED, local=False)
    await drained(restarted, pusher, 2)
    assert [a.key for a in pusher.pushed] == ["r1", "t1"]


async def test_nothing_is_pushed_while_the_user_is_at_the_terminal(tmp_path: Path) -> None:
    pusher = FakePusher()
    notifier = Notifier(tmp_path, pusher)
    notifier.notify(ASKED, local=True)
    notifier.notify(FAILED, local=False)
    await drained(notifier, pusher, 1)
    assert pusher.pushed == [FAILED]


async def test_a_slow_push_service_never_holds_up_the_watch(tmp_path: Path) -> None:
    pusher = FakePusher(held=True)
    notifier = Notifier(tmp_path, pusher)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(notifier.run)
            notifier.notify(ASKED, local=False)
            await pusher.arrived.wait()  # the push hangs from here on
            notifier.notify(FAILED, local=False)  # returns at once all the same
            assert pusher.pushed == []
            pusher.release.set()
            await pusher.until_pushed(2)
            tg.cancel_scope.cancel()


async def test_a_failure_is_retried_within_a_bound_and_logged_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pusher = FakePusher(failures=5)
    notifier = Notifier(tmp_path, pusher, attempts=3, backoff=(0.0,))
    notifier.notify(ASKED, local=False)
    notifier.notify(FAILED, local=False)  # the next event still goes (its tries fail too, then one succeeds)
    await drained(notifier, pusher, 1)
    assert pusher.tries == 6 and pusher.pushed == [FAILED]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 5 and all("\n" not in w for w in warnings)
    assert "failed (3/3): the push service is down" in warnings[2]


def test_the_settings_are_kept_and_checked(tmp_path: Path) -> None:
    assert read_push_settings(tmp_path) == PushSettings(None, 20.0)
    configure_push(tmp_path, "http://127.0.0.1:9/push", None)
    assert configure_push(tmp_path, None, 0.0) == PushSettings("http://127.0.0.1:9/push", 0.0)
    assert read_push_settings(tmp_path) == PushSettings("http://127.0.0.1:9/push", 0.0)
    assert configure_push(tmp_path, "", None).url is None
    with pytest.raises(DaemonError, match="--push-url must be"):
        configure_push(tmp_path, "exp.host", None)
    with pytest.raises(DaemonError, match="--long-turn"):
        configure_push(tmp_path, None, -1.0)


class Recorder:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.requests: list[httpx.Request] = []
        self._answers = answers

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=self._answers[request.url.path])


async def test_happys_server_is_asked_to_push_a_failure_as_done() -> None:
    server = Recorder({"/v1/sessions/srv-1/push-event": {"success": True, "result": "suppressed"}})
    pusher = pusher_for(PushSettings(), "http://happy", "tok", httpx.MockTransport(server))
    assert await pusher.push(FAILED) == "suppressed"
    [request] = server.requests
    assert request.headers["authorization"] == "Bearer tok"
    body = json.loads(request.content)
    assert (body["kind"], body["title"], body["body"]) == ("done", "It failed", "fix it")
    assert body["data"] == {
        "sessionId": "srv-1",
        "kind": "failed",
        "sessionTitle": "fix it",
        "url": "/session/srv-1",
    }


async def test_the_bridge_pushes_to_the_configured_service_in_expos_format() -> None:
    tokens = [{"id": str(n), "token": f"ExponentPushToken[{n}]"} for n in range(150)]
    recorder = Recorder({"/v1/push-tokens": {"tokens": tokens}, "/push": {"data": []}})
    settings = PushSettings("http://pushes/push")
    pusher = pusher_for(settings, "http://happy", "tok", httpx.MockTransport(recorder))
    assert await pusher.push(ASKED) == "sent to 150 device(s)"
    fetch, *posts = recorder.requests
    assert fetch.url == "http://happy/v1/push-tokens" and fetch.headers["authorization"] == "Bearer tok"
    assert [len(json.loads(p.content)) for p in posts] == [100, 50]
    assert all(p.url == "http://pushes/push" and "authorization" not in p.headers for p in posts)
    first = json.loads(posts[0].content)[0]
    assert first == {
        "to": "ExponentPushToken[0]",
        "title": "Permission request",
        "body": "fix it",
        "data": {
            "sessionId": "srv-1",
            "kind": "permission",
            "sessionTitle": "fix it",
            "url": "/session/srv-1",
            "requestId": "r1",
            "tool": "Bash",
        },
        "sound": "default",
        "priority": "high",
    }
