"""The bridge's live side, on the account's socket: each session sessions-out has linked gets its
RPCs registered (again after every reconnection), its messages from the app read after its mark
(on a push, on a reconnection, when it starts to run), and, while it runs, a watch (agentState,
presence, metadata). This machine is registered and kept alive, its metadata kept current, its RPCs
(start, resume and stop a session: `machine.py`, `spawning.py`) registered beside the sessions' ones;
a session started without a terminal that a client ends (`session-end`, as `happy-agent stop` sends
it) is stopped."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from happy_launcher.bridge.app.inbox import Inbox, control_send
from happy_launcher.bridge.app.machine import (
    MachineMetadata,
    MachineRpc,
    keep_alive,
    machine_cipher,
    register_machine,
)
from happy_launcher.bridge.app.session_rpc import SessionRpc, SocketControl, Target, rpc_methods
from happy_launcher.bridge.app.spawning import MachineSessions
from happy_launcher.bridge.app.versioned import Versioned
from happy_launcher.bridge.app.watch import Notify, SessionWatch, ignore
from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.link.api import HappyApi
from happy_launcher.bridge.link.retry import Retry, log_failure
from happy_launcher.bridge.link.updates import Updates, open_updates
from happy_launcher.bridge.out.links import Linked
from happy_launcher.bridge.out.metadata import MachineFacts, session_metadata
from happy_launcher.control.views import SessionView
from happy_launcher.protocol import Clock
from happy_launcher.session.naming import TranscriptTitles, session_title
from happy_launcher.spawn.spawner import Spawner
from happy_launcher.store.sessions import SessionStore

_log = logging.getLogger(__name__)


@dataclass
class _Marks:
    """What the inbox needs of our sessions: their marks (the store), their sockets (as found)."""

    store: SessionStore
    server: str
    views: dict[str, SessionView] = field(default_factory=dict)

    async def received_seq(self, session: str) -> int:
        link = await anyio.to_thread.run_sync(self.store.happy_link, session, self.server)
        return 0 if link is None else link.received_seq

    async def advance_received(self, session: str, seq: int) -> None:
        await anyio.to_thread.run_sync(self.store.advance_received, session, self.server, seq)

    def control_socket(self, session: str) -> Path | None:
        view = self.views.get(session)
        return view.socket if view is not None and view.running else None


class Live:
    """The `UpdateHandler` of the account's socket; `linked` is sessions-out's `Links.on_link`."""

    def __init__(
        self,
        home: Path,
        server: str,
        store: SessionStore,
        api: HappyApi,
        retry: Retry,
        machine: MachineFacts,
        clock: Clock,
        spawner: Spawner,
        claude: Callable[[], bool],
        look_now: Callable[[], None],
        kill: Callable[[int, int], None] = os.kill,
        *,
        notify: Notify = ignore,
        long_turn: float = 20.0,
    ) -> None:
        """`claude`: whether Claude is found on this machine (the machine's metadata says);
        `look_now`: sessions out's (`Links.look_now`), told of each session started here."""
        self._home = home
        self._server = server
        self._api = api
        self._retry = retry
        self._machine = machine
        self._clock = clock
        self._spawner = spawner
        self._sessions = MachineSessions(
            spawner, lambda happy_id: store.session_of(happy_id, server), look_now
        )
        self._metadata = MachineMetadata(machine, claude, clock)
        self._notify = notify
        self._long_turn = long_turn
        self._machine_rpc: MachineRpc | None = None
        self._marks = _Marks(store, server)
        self._inbox = Inbox(self._marks, api, control_send)
        self._control = SocketControl()
        self._rpc = SessionRpc(self._target, self._control, self._allow, kill, self._switched, self._denied)
        self._by_happy: dict[str, Linked] = {}
        self._allowed: dict[str, list[str]] = {}
        self._watches: dict[str, SessionWatch] = {}
        self._registered: set[str] = set()  # on this connection
        self._titles = TranscriptTitles()
        self._tg: TaskGroup | None = None
        self._updates: Updates | None = None

    async def run(self, token: str, credentials: Credentials) -> None:
        """Until cancelled: the socket open (reconnecting), the machine registered and alive."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._spawner.run)
            metadata = await anyio.to_thread.run_sync(self._metadata.current)
            await register_machine(self._api, self._retry, credentials, self._machine, metadata)
            cipher, _ = machine_cipher(credentials)
            self._machine_rpc = MachineRpc(self._machine.machine_id, cipher, self._sessions)
            async with open_updates(self._server, token, self) as updates:
                self._updates = updates
                tg.start_soon(
                    self._metadata.keep, Versioned(updates, "machine", self._machine.machine_id, cipher)
                )
                await self._register_machine()
                for linked in list(self._by_happy.values()):  # linked before the socket was up
                    tg.start_soon(self._serve, linked, True)
                await keep_alive(updates, self._machine.machine_id, self._clock)

    def linked(self, linked: Linked, view: SessionView) -> None:
        """Sessions-out took a session up (a run of it, or its stored envelopes)."""
        self._by_happy[linked.happy_id] = linked
        self._marks.views[linked.session] = view
        self._sessions.linked(linked.session, view.pid, linked.happy_id)
        if self._tg is not None and self._updates is not None:
            self._tg.start_soon(self._serve, linked, True)

    async def _serve(self, linked: Linked, taken_up: bool = False) -> None:
        """`taken_up`: sessions out has just taken the session up (a run, or what an ended one
        left unsent): an ended one is told ended (it may have ended while the bridge was down)."""
        try:
            await self._register(linked)
            view = self._marks.views.get(linked.session)
            if view is not None and view.running and linked.session not in self._watches:
                assert self._tg is not None
                self._tg.start_soon(self._watch, linked, view)
            elif view is not None and not view.running and taken_up:
                await self._told_ended(linked, view)
            await self._inbox.catch_up(linked)
        except Exception as exc:  # one session's trouble never stops the others' (nor the bridge)
            log_failure(f"session {linked.session}", exc)

    async def _told_ended(self, linked: Linked, view: SessionView) -> None:
        assert self._updates is not None
        metadata = Versioned(self._updates, "metadata", linked.happy_id, linked.cipher)
        await metadata.publish(self._describe(view, False, None, self._clock()))
        await self._updates.emit("session-end", {"sid": linked.happy_id, "time": self._clock()})

    async def _register(self, linked: Linked) -> None:
        if self._updates is None or linked.happy_id in self._registered:
            return
        self._registered.add(linked.happy_id)
        for method in rpc_methods(linked.happy_id):
            await self._updates.emit("rpc-register", {"method": method})

    async def _register_machine(self) -> None:
        if self._updates is not None and self._machine_rpc is not None:
            for method in self._machine_rpc.methods():
                await self._updates.emit("rpc-register", {"method": method})

    async def _watch(self, linked: Linked, view: SessionView) -> None:
        assert self._updates is not None
        started = self._clock()
        watch = SessionWatch(
            self._home,
            view,
            linked.happy_id,
            self._updates,
            self._control,
            self._clock,
            state=Versioned(self._updates, "agentState", linked.happy_id, linked.cipher),
            metadata=Versioned(self._updates, "metadata", linked.happy_id, linked.cipher),
            describe=lambda running, first: self._describe(view, running, first, started),
            allowed=lambda: self._allowed.get(linked.session, []),
            notify=self._notify,
            long_turn=self._long_turn,
        )
        self._watches[linked.session] = watch
        try:
            await watch.run()
        except Exception as exc:
            log_failure(f"session {linked.session}", exc)
        finally:
            del self._watches[linked.session]
            if self._marks.views.get(linked.session) is view:  # ended: no socket, no pid to signal
                self._marks.views[linked.session] = view._replace(state="ended", socket=None, pid=None)

    def _describe(self, view: SessionView, running: bool, first: str | None, started: int) -> dict[str, Any]:
        title = session_title(view.first_prompt or first, view.transcript, self._titles)
        return session_metadata(
            self._machine,
            cwd=view.cwd,
            claude_session_id=view.claude_id,
            title=title,
            running=running,
            host_pid=view.pid,
            now_ms=started if running else self._clock(),
        )

    # --- UpdateHandler ------------------------------------------------------------------------

    async def connected(self) -> None:
        self._registered.clear()  # the server forgot them with the old connection
        self._metadata.forget()
        if self._tg is None or self._updates is None:
            return  # the first connection: `run` serves what is linked once it has the socket
        await self._register_machine()
        for linked in list(self._by_happy.values()):
            self._tg.start_soon(self._serve, linked)
        for watch in list(self._watches.values()):
            self._tg.start_soon(watch.resync)

    async def update(self, body: dict[str, Any]) -> None:
        if body.get("t") != "new-message" or self._tg is None:
            return
        linked = self._by_happy.get(str(body.get("sid")))
        message = body.get("message")
        if linked is None or not isinstance(message, dict):
            return
        content = message.get("content")
        sealed = content.get("c") if isinstance(content, dict) else None
        if isinstance(sealed, str) and self._inbox.pushed(linked, str(message.get("id")), sealed):
            self._tg.start_soon(self._serve, linked)

    async def ephemeral(self, body: dict[str, Any]) -> None:
        if body.get("type") == "activity" and body.get("active") is False and isinstance(body.get("id"), str):
            await self._sessions.stop(body["id"])  # a no-op for a session not started here

    async def rpc(self, method: str, params: str) -> str | None:
        if self._machine_rpc is not None and self._machine_rpc.serves(method):
            return await self._machine_rpc.call(method, params)
        return await self._rpc.call(method, params)

    # --- what the RPCs need -------------------------------------------------------------------

    def _target(self, happy_id: str) -> Target | None:
        linked = self._by_happy.get(happy_id)
        if linked is None:
            return None
        view = self._marks.views.get(linked.session)
        running = view is not None and view.running
        return Target(
            linked.session,
            linked.cipher,
            view.socket if running and view is not None else None,
            view.pid if running and view is not None else None,
        )

    async def _switched(self, session: str, to: Literal["local", "remote"]) -> None:
        watch = self._watches.get(session)
        if watch is not None:
            await watch.switched(to)  # the app's answer comes with controlledByUser already right

    def _denied(self, session: str, request_id: str, reason: str) -> None:
        watch = self._watches.get(session)
        if watch is not None:
            watch.state.reasons[request_id] = reason

    def _allow(self, session: str, tools: Sequence[str]) -> None:
        allowed = self._allowed.setdefault(session, [])
        allowed.extend(tool for tool in tools if tool not in allowed)
