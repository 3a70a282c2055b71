"""Notifications from the bridge (issue 19): what a session's watch finds deserving its user's
attention (control/attention.py) goes to the user's phone, once per event, without ever holding
up the watch (a queue and a worker of its own).

Two ways, by configuration (`happy daemon start --push-url URL`, kept in HAPPY_HOME_DIR):
without an address, Happy's server is asked to push (`POST /v1/sessions/:id/push-event`, as
Happy's CLI does: the server knows whether the app is open and sends through Expo); with one,
the bridge fetches the account's push tokens and posts Expo-format messages to that address
itself. Either way nothing is pushed while the session's user is at its terminal (local mode),
as Happy's CLI pushes only from remote mode; an event is never pushed twice (its key is kept in
HAPPY_HOME_DIR, so a restarted bridge that sees a request again stays quiet); a failure is
logged in one line and retried a bounded number of times."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import anyio
import httpx

from happy_launcher.control.attention import Attention
from happy_launcher.errors import DaemonError
from happy_launcher.home.files import write_private

_log = logging.getLogger(__name__)
SETTINGS_FILE = "push.json"
PUSHED_FILE = "pushed.json"
KEEP = 1000  # keys remembered: far more than the events a restart could see again
LONG_TURN = 20.0  # seconds: a turn this long tells its end
ATTEMPTS = 3
EXPO_BATCH = 100  # messages per post: Expo's limit
TIMEOUT = 15.0


class PushFailed(Exception):
    """A push that did not go (unreachable, refused); retried up to a bound."""


class Pusher(Protocol):
    async def push(self, attention: Attention) -> str:
        """What became of it, in a few words for the log (the server's `result`, ...);
        PushFailed when it may go on a later try."""
        ...


@dataclass(frozen=True)
class PushSettings:
    url: str | None = None  # None: Happy's server pushes
    long_turn: float = LONG_TURN


def read_push_settings(home: Path) -> PushSettings:
    try:
        data = json.loads((home / SETTINGS_FILE).read_text())
        return PushSettings(data.get("url") or None, float(data.get("long_turn", LONG_TURN)))
    except (OSError, ValueError, TypeError, AttributeError):
        return PushSettings()


def configure_push(home: Path, url: str | None, long_turn: float | None) -> PushSettings:
    """`happy daemon start --push-url URL --long-turn S`: what was given replaces what was kept
    (an empty URL: back to Happy's server)."""
    if url and not url.startswith(("http://", "https://")):
        raise DaemonError(f"--push-url must be an http:// or https:// address, not {url!r}")
    if long_turn is not None and long_turn < 0:
        raise DaemonError(f"--long-turn must be 0 seconds or more, not {long_turn}")
    kept = read_push_settings(home)
    settings = PushSettings(
        kept.url if url is None else (url or None), kept.long_turn if long_turn is None else long_turn
    )
    _write_json(home / SETTINGS_FILE, {"url": settings.url, "long_turn": settings.long_turn})
    return settings


def _write_json(path: Path, data: Any) -> None:
    write_private(path, json.dumps(data).encode())


def push_data(attention: Attention) -> dict[str, Any]:
    """The push's `data`: Happy's CLI's fields, nothing of the request's input."""
    data: dict[str, Any] = {
        "sessionId": attention.session_id,
        "kind": attention.kind,
        "sessionTitle": attention.body,
        "url": f"/session/{quote(attention.session_id, safe='')}",
    }
    if attention.request_id is not None:
        data |= {"requestId": attention.request_id, "tool": attention.tool}
    return data


class _Http:
    def __init__(self, server: str, token: str, transport: httpx.AsyncBaseTransport | None) -> None:
        self._server = server
        self._auth = {"Authorization": f"Bearer {token}"}  # Happy's server's only, never the push service's
        self._client = httpx.AsyncClient(base_url=server, timeout=TIMEOUT, transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _call(self, what: str, method: str, url: str, body: Any = None) -> Any:
        ours = "://" not in url  # a path on Happy's server; else the push service's address
        try:
            answer = await self._client.request(method, url, json=body, headers=self._auth if ours else None)
        except httpx.TransportError as exc:
            where = self._server if ours else url
            raise PushFailed(f"cannot reach {where} to {what} ({type(exc).__name__})") from None
        if answer.status_code != 200:
            raise PushFailed(f"{what}: HTTP {answer.status_code}")
        try:
            return answer.json()
        except ValueError:
            raise PushFailed(f"{what}: the answer is not JSON") from None


class ServerPusher(_Http):
    """Happy's server pushes (`push-event`): it applies Happy's rule (nothing while the app is
    open) and sends through Expo; its `result` is the answer."""

    async def push(self, attention: Attention) -> str:
        kind = "done" if attention.kind == "failed" else attention.kind  # the server knows no "failed"
        body = {
            "kind": kind,
            "title": attention.title,
            "body": attention.body[:500],
            "data": push_data(attention),
        }
        path = f"/v1/sessions/{quote(attention.session_id, safe='')}/push-event"
        answer = await self._call("ask the server to push", "POST", path, body)
        result = str(answer.get("result", "accepted")) if isinstance(answer, dict) else "accepted"
        reason = answer.get("reason") if isinstance(answer, dict) else None
        return f"{result} ({reason})" if reason else result


class ExpoPusher(_Http):
    """The bridge pushes: the account's tokens from Happy's server, Expo's messages to `url`."""

    def __init__(
        self, server: str, token: str, url: str, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(server, token, transport)
        self._url = url

    async def push(self, attention: Attention) -> str:
        answer = await self._call("read the push tokens", "GET", "/v1/push-tokens")
        tokens = [t["token"] for t in answer.get("tokens", []) if isinstance(t, dict) and "token" in t]
        if not tokens:
            return "no_tokens"
        data = push_data(attention)
        messages = [
            {"to": to, "title": attention.title, "body": attention.body, "data": data}
            | {"sound": "default", "priority": "high"}
            for to in tokens
        ]
        for first in range(0, len(messages), EXPO_BATCH):
            await self._call("push", "POST", self._url, messages[first : first + EXPO_BATCH])
        return f"sent to {len(tokens)} device(s)"


def pusher_for(
    settings: PushSettings, server: str, token: str, transport: httpx.AsyncBaseTransport | None = None
) -> ServerPusher | ExpoPusher:
    if settings.url is None:
        return ServerPusher(server, token, transport)
    return ExpoPusher(server, token, settings.url, transport)


class Pushed:
    """The keys of the events pushed (or being pushed), kept in HAPPY_HOME_DIR: the last KEEP."""

    def __init__(self, home: Path) -> None:
        self._path = home / PUSHED_FILE
        try:
            keys = json.loads(self._path.read_text())
            self._keys: list[str] = [str(k) for k in keys] if isinstance(keys, list) else []
        except (OSError, ValueError):
            self._keys = []
        self._seen = set(self._keys)

    def first(self, key: str) -> bool:
        """Whether `key` is new; it is kept from then on."""
        if key in self._seen:
            return False
        self._keys = [*self._keys[-(KEEP - 1) :], key]
        self._seen = set(self._keys)
        _write_json(self._path, self._keys)
        return True


class Notifier:
    """`notify` from the watches (never blocks), `run` the worker that pushes."""

    def __init__(
        self, home: Path, pusher: Pusher, *, attempts: int = ATTEMPTS, backoff: Sequence[float] = (1.0, 4.0)
    ) -> None:
        self._pusher = pusher
        self._pushed = Pushed(home)
        self._attempts = attempts
        self._backoff = backoff
        self._send, self._receive = anyio.create_memory_object_stream[Attention](64)

    def notify(self, attention: Attention, *, local: bool) -> None:
        if local:
            _log.debug("no push for %s %s: its user is at the terminal", attention.kind, attention.key)
            return
        # Kept before it is sent (a small synchronous write): a crash mid-push loses it rather
        # than pushing it twice.
        if not self._pushed.first(f"{attention.session_id}/{attention.key}"):
            return
        try:
            self._send.send_nowait(attention)
        except anyio.WouldBlock:
            _log.warning(
                "push of %s in session %s dropped: too many waiting", attention.kind, attention.session_id
            )

    async def run(self) -> None:
        async with self._receive:
            async for attention in self._receive:
                await self._push(attention)

    async def _push(self, attention: Attention) -> None:
        what = f"push {attention.kind} {attention.key} of session {attention.session_id}"
        for attempt in range(1, self._attempts + 1):
            try:
                result = await self._pusher.push(attention)
            except PushFailed as exc:
                last = attempt == self._attempts
                _log.warning(
                    "%s failed (%d/%d): %s%s",
                    what,
                    attempt,
                    self._attempts,
                    exc,
                    "" if last else "; retrying",
                )
                if not last:
                    await anyio.sleep(self._backoff[min(attempt, len(self._backoff)) - 1])
                continue
            _log.info("%s: %s", what, result)
            return
