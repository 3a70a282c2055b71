"""Which sessions there are, for every face: the store's (running and ended, control/views.py),
joined, when the store does not describe each live launcher, with what the launchers answer on
their control sockets."""

from __future__ import annotations

from pathlib import Path

import anyio

from happy_launcher.control.client import connect
from happy_launcher.control.sockets import live_sockets
from happy_launcher.control.views import SessionView, from_store, newest_first, stored_summaries, stored_view
from happy_launcher.control.wire import Facts
from happy_launcher.errors import ControlError
from happy_launcher.home.procs import running

HELLO_WITHIN = 1.0  # seconds a launcher has to answer `hello` before it is listed without a mode


async def discover(home: Path, *, hello_within: float = HELLO_WITHIN) -> list[SessionView]:
    """Every session: the running ones first, then the others, each most recently started first.
    From the store alone while it describes every live launcher: the page lists sessions every
    few seconds, and a `hello` costs each running session a connection to answer."""
    views = from_store(home)
    return views if views is not None else await asked(home, hello_within=hello_within)


async def asked(home: Path, *, hello_within: float = HELLO_WITHIN) -> list[SessionView]:
    """`discover`, with each live launcher asked on its socket what it is."""
    live = await _hello_all(home, hello_within)
    by_id = {facts.happy_session_id: (facts, path) for facts, path in live if facts.happy_session_id}
    views: list[SessionView] = []
    for summary in stored_summaries(home):
        views.append(stored_view(home, summary, *by_id.pop(summary.info.id, (None, None))))
    named = {view.happy_id for view in views}
    for facts, path in live:
        if facts.happy_session_id is None or facts.happy_session_id not in named:
            views.append(_live_view(facts, path))
    return newest_first(views)


def _live_view(facts: Facts, path: Path) -> SessionView:
    return SessionView(
        facts.happy_session_id,
        facts.claude_session_id,
        "running",
        facts.mode,
        facts.cwd,
        facts.pid,
        facts.started_at,
        None,
        path,
        terminal=facts.terminal,
    )


async def _hello_all(home: Path, within: float) -> list[tuple[Facts, Path]]:
    """The facts of every launcher that answers on its socket within `within` seconds."""
    found: list[tuple[Facts, Path]] = []

    async def hello(path: Path) -> None:
        with anyio.move_on_after(within):
            try:
                async with connect(path, within=within) as client:
                    found.append(((await client.hello()).session, path))
            except ControlError:
                pass  # stale, refused, or not happy: not a running session we can talk to

    async with anyio.create_task_group() as tg:
        for pid, path in live_sockets(home).items():
            if running(pid):
                tg.start_soon(hello, path)
    return found
