"""One running session as the app sees it live: its pending permission requests (agentState), who
has it (the TUI or not: set by the app's `switch`, asked again every `KEEPALIVE` seconds for a
switch from elsewhere, which the control socket does not tell), whether a turn runs
(`session-alive` with `thinking`, sent on every change and every `KEEPALIVE` seconds), its
metadata (its title once it has one; `archived` at the end) and its end (`session-end`). Read
from the session's control socket (`control/follow.py`), told to the server on the account's
socket.

Tools the app allowed "for this session" are allowed here from then on, without asking. What
asks for the user (a request, a long turn's end, a failed turn: control/attention.py) goes to
`notify`, with whether the user is at the terminal."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import orjson

from happy_launcher.bridge.app.agent_state import AgentState
from happy_launcher.bridge.app.session_rpc import Control
from happy_launcher.bridge.app.versioned import Versioned
from happy_launcher.bridge.link.updates import Updates
from happy_launcher.control.attention import Attention, AttentionTracker, session_title
from happy_launcher.control.client import EnvelopeBytes
from happy_launcher.control.follow import Connected, follow
from happy_launcher.control.views import SessionView
from happy_launcher.control.wire import Permission, PermissionRequested, PermissionSettled
from happy_launcher.errors import HappyError
from happy_launcher.protocol import Clock, parse_envelope

_log = logging.getLogger(__name__)
KEEPALIVE = 10.0  # seconds between `session-alive`s (the server marks a session idle after 10 min)
_BASH = re.compile(r"^Bash\((.+)\)$")


def allows(allowed: Sequence[str], permission: Permission) -> bool:
    """Whether tools allowed for the session (Happy's `allowTools`: a tool name, `Bash(cmd)`, or
    `Bash(prefix:*)`) cover this request."""
    command = permission.input.get("command") if permission.tool == "Bash" else None
    for rule in allowed:
        if rule == permission.tool and permission.tool != "Bash":
            return True
        match = _BASH.match(rule)
        if match is not None and isinstance(command, str):
            pattern = match.group(1)
            if command == pattern or (pattern.endswith(":*") and command.startswith(pattern[:-2])):
                return True
    return False


Describe = Callable[[bool, str | None], dict[str, Any]]  # (running, first prompt) -> metadata
Notify = Callable[[Attention, bool], None]  # (what, whether its user is at the terminal); never blocks


def ignore(attention: Attention, local: bool) -> None:
    pass


class SessionWatch:
    def __init__(
        self,
        home: Path,
        view: SessionView,
        happy_id: str,
        updates: Updates,
        control: Control,
        clock: Clock,
        *,
        state: Versioned,
        metadata: Versioned,
        describe: Describe,
        allowed: Callable[[], Sequence[str]],
        keepalive: float = KEEPALIVE,
        notify: Notify = ignore,
        long_turn: float = 20.0,
    ) -> None:
        self._home = home
        self._view = view
        self._happy_id = happy_id
        self._updates = updates
        self._control = control
        self._clock = clock
        self._publisher = state
        self._metadata = metadata
        self._describe = describe
        self._allowed = allowed
        self._keepalive_every = keepalive
        self._keepalive_ms = int(keepalive * 1000)
        self._switched_at: int | None = None  # ms: the app's last switch
        self.state = AgentState()
        self.thinking = False
        self._first_prompt: str | None = None
        self._described: dict[str, Any] | None = None
        self._notify = notify
        self._attention = AttentionTracker(happy_id, long_turn)

    async def run(self) -> None:
        """Until the session ends; then its requests are canceled and `session-end` is sent. A
        watch that stops for another reason (the bridge stopping, a broken control connection)
        tells no end: the session may well run on (and the app's end of a session it started is
        a stop)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._keepalive)
            await self._follow()
            tg.cancel_scope.cancel()
        self.state.cancel_all(self._clock())
        await self._publisher.publish(self.state.to_json())
        await self._describe_as(running=False)
        await self._updates.emit("session-end", {"sid": self._happy_id, "time": self._clock()})

    async def resync(self) -> None:
        """After a reconnection: the server hears the state and presence again."""
        await self._publisher.publish(self.state.to_json())
        await self._describe_as(running=True, again=True)
        await self._alive()

    async def switched(self, to: str) -> None:
        """The app switched the session: the server hears who has it at once, though the session
        tells its old mode until it has handed over."""
        self._switched_at = self._clock()
        await self._hands(to == "local")

    async def refresh(self) -> None:
        """Ask the session where it runs (a switch from the terminal or a `happy` verb); not
        within a keepalive of the app's switch, which may still be handing over."""
        socket = self._view.socket
        recent = self._switched_at is not None and self._clock() - self._switched_at < self._keepalive_ms
        if socket is None or recent:
            return
        try:
            local = await self._control.mode(socket) == "local"
        except HappyError as exc:  # ending: the watch's own end follows
            _log.debug("mode of %s not read: %s", self._happy_id, exc)
            return
        await self._hands(local)

    async def _hands(self, local: bool) -> None:
        if local != self.state.controlled_by_user:
            self.state.controlled_by_user = local
            await self._publisher.publish(self.state.to_json())

    async def _describe_as(self, *, running: bool, again: bool = False) -> None:
        """Send the metadata if it changed (or `again`, after a reconnection)."""
        described = self._describe(running, self._first_prompt)
        if again or described != self._described:
            await self._metadata.publish(described)
            self._described = described
            summary = described.get("summary")
            text = summary.get("text") if isinstance(summary, dict) else None
            self._attention.title = session_title(text, described.get("path"))

    async def _follow(self) -> None:
        async with aclosing(follow(self._home, self._view, None)) as items:
            async for item in items:
                if isinstance(item, Connected):
                    self.state.controlled_by_user = item.facts.mode == "local"
                    self.thinking = item.facts.busy
                    self.state.requests.clear()  # what is still pending follows, told again
                    await self._publisher.publish(self.state.to_json())
                    await self._describe_as(running=True)
                    await self._alive()
                elif isinstance(item, PermissionRequested):
                    await self._requested(item.request)
                elif isinstance(item, PermissionSettled):
                    if self.state.settle(item.request_id, item.outcome, self._clock()):
                        await self._publisher.publish(self.state.to_json())
                elif isinstance(item, EnvelopeBytes):
                    await self._envelope(item.body)

    async def _requested(self, permission: Permission) -> None:
        socket = self._view.socket
        if socket is not None and allows(self._allowed(), permission):
            _log.info("request %s allowed: its tool was allowed for the session", permission.id)
            await self._control.answer(socket, permission.id, True, None)
            return
        self.state.request(permission, self._clock())
        self._tell(self._attention.permission(permission), permission.origin == "local")  # never waits
        await self._publisher.publish(self.state.to_json())

    async def _envelope(self, body: bytes) -> None:
        envelope = orjson.loads(body)
        ev = envelope.get("ev", {})
        kind = ev.get("t")
        if self._first_prompt is None and envelope.get("role") == "user" and kind == "text":
            self._first_prompt = ev.get("text")
            await self._describe_as(running=True)  # a title, at last
        if kind in ("turn-start", "turn-end") and (kind == "turn-start") != self.thinking:
            self.thinking = kind == "turn-start"
            await self._alive()
        if kind == "turn-end":
            await self._describe_as(running=True)  # Claude may have titled the session
        if kind in ("turn-start", "turn-end"):  # parsed only here: the tracker needs no other
            self._tell(self._attention.envelope(parse_envelope(body), self._clock() / 1000), False)

    def _tell(self, attention: Attention | None, local: bool) -> None:
        if attention is not None:
            self._notify(attention, local or self.state.controlled_by_user)

    async def _alive(self) -> None:
        alive = {"sid": self._happy_id, "time": self._clock(), "thinking": self.thinking}
        await self._updates.emit("session-alive", alive)

    async def _keepalive(self) -> None:
        while True:
            await anyio.sleep(self._keepalive_every)
            await self._alive()
            await self.refresh()
