"""Sessions out: every happy session becomes a Happy session on the server and its envelopes are
posted there (`outbox.py`). Running sessions are found as they appear (a look at the control
directory each `poll` seconds; the sessions are asked only when its sockets change, while one
has not named its session yet, or when the store, changed, holds envelopes no task sends: a run
too short to be seen), ended ones with envelopes past their mark from the store; each gets one
task, all in one task group."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.link.api import HappyApi
from happy_launcher.bridge.link.retry import AnyioSleeper, Backoff, Retry, ServerHealth, Sleeper, log_failure
from happy_launcher.bridge.out.links import Linked, LinkMaker, Links
from happy_launcher.bridge.out.metadata import MachineFacts, machine_facts, session_metadata
from happy_launcher.bridge.out.outbox import Poster, envelope_stream, feed_live, feed_stored
from happy_launcher.control.discovery import discover
from happy_launcher.control.sockets import live_sockets
from happy_launcher.control.views import SessionView
from happy_launcher.session.naming import TranscriptTitles, session_title
from happy_launcher.store.sessions import SessionStore

POLL = 1.0  # seconds between two looks at the control directory


@dataclass
class _Out:
    home: Path
    store: SessionStore
    links: Links
    maker: LinkMaker
    poster: Poster
    machine: MachineFacts
    retry: Retry
    clock: Callable[[], float]
    titles: TranscriptTitles = field(default_factory=TranscriptTitles)
    active: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)  # on the server under a key we lost
    rescan: bool = True

    async def session(self, view: SessionView) -> None:
        """Link the session and post its envelopes, live while it runs, then from the store."""
        assert view.happy_id is not None
        sid = view.happy_id
        try:
            title = await anyio.to_thread.run_sync(
                session_title, view.first_prompt, view.transcript, self.titles
            )
            metadata = session_metadata(
                self.machine,
                cwd=view.cwd,
                claude_session_id=view.claude_id,
                title=title,
                running=view.running,
                host_pid=view.pid,
                now_ms=int(self.clock() * 1000),
            )
            made = await self.maker.ensure(sid, metadata)
            if made is None:
                self.skipped.add(sid)
                return
            await self._post(made[0], made[1], view)
        except Exception as exc:  # one session's trouble never stops the others' (nor the bridge)
            log_failure(f"session {sid} is not sent", exc)
            self.skipped.add(sid)
        finally:
            self.active.discard(sid)
            self.rescan = True  # it ended, or was resumed meanwhile: look again

    async def _post(self, linked: Linked, sent: int, view: SessionView) -> None:
        self.links.add(linked, view)
        send, receive = envelope_stream()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.poster.run, linked, sent, receive)
            if view.running:
                tg.start_soon(feed_live, self.home, view, sent, send, self.retry)
            else:
                tg.start_soon(feed_stored, self.store, linked.session, sent, send)

    async def unsent_untaken(self) -> bool:
        """Whether the store holds envelopes not sent of a session no task sends: a run that
        began and ended between two looks at the control directory (a short `--resume -p`)."""
        unsent = await anyio.to_thread.run_sync(self.store.unsent_sessions, self.poster.server)
        return any(sid not in self.active and sid not in self.skipped for sid in unsent)

    async def scan(self, tg: TaskGroup) -> None:
        views = await discover(self.home)
        self.rescan = any(view.running and view.happy_id is None for view in views)
        unsent = set(await anyio.to_thread.run_sync(self.store.unsent_sessions, self.poster.server))
        for view in views:  # running ones first
            sid = view.happy_id
            if sid is None or sid in self.active or sid in self.skipped:
                continue
            if view.running or sid in unsent:
                self.active.add(sid)
                tg.start_soon(self.session, view)


async def sessions_out(
    home: Path,
    server: str,
    credentials: Credentials,
    machine_id: str,
    api: HappyApi,
    *,
    links: Links | None = None,
    health: ServerHealth | None = None,
    env: Mapping[str, str] | None = None,
    sleeper: Sleeper | None = None,
    backoff: Backoff | None = None,
    clock: Callable[[], float] = time.time,
    poll: float = POLL,
) -> None:
    """Run until cancelled: every session of `home` out to `server` through `api`. `links` is
    told of each session linked (the socket side serves those), `health` of the server's state."""
    retry = Retry(sleeper or AnyioSleeper(), backoff or Backoff(), health or ServerHealth())
    store = SessionStore.open(home)
    try:
        out = _Out(
            home=home,
            store=store,
            links=links or Links(),
            maker=LinkMaker(store, server, credentials, api, retry),
            poster=Poster(store, server, api, retry),
            machine=machine_facts(machine_id, home, os.environ if env is None else env),
            retry=retry,
            clock=clock,
        )
        async with anyio.create_task_group() as tg:
            seen: dict[int, Path] | None = None
            version = None  # the store's, at the last look: changed, it may hold a run not seen
            while True:
                sockets = live_sockets(home)
                now = await anyio.to_thread.run_sync(store.data_version)
                changed, version = now != version, now
                if out.rescan or sockets != seen or (changed and await out.unsent_untaken()):
                    seen = sockets
                    await out.scan(tg)
                await out.links.pause(partial(retry.sleeper.sleep, poll))
    finally:
        store.close()
