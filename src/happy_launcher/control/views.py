"""What the store says about sessions, and how a verb names one: a session counts as running only
while its launcher lives; one whose launcher is gone is shown ended, whatever the store still says.
The launchers' own facts are joined in by control/discovery.py; this module needs neither the event
loop nor the control client, so a verb that can read it all from the store (`happy sessions`,
`happy watch` of an ended session) starts without them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from happy_launcher.control.sockets import live_sockets
from happy_launcher.errors import AmbiguousSessionError, NoSuchSessionError
from happy_launcher.home.dirs import socket_path
from happy_launcher.home.procs import is_alive, running
from happy_launcher.store.sessions import DB_NAME, SessionStore, SessionSummary

if TYPE_CHECKING:
    from happy_launcher.control.wire import Facts


class SessionView(NamedTuple):
    happy_id: str | None  # None: a launcher whose Claude has not named its session yet
    claude_id: str | None
    state: str  # "running", or how it ended ("completed", "failed", "ended": launcher gone)
    mode: str | None  # while running, as its launcher answered or noted in the store
    cwd: str
    pid: int | None
    started_at: int
    last_activity: int | None
    socket: Path | None
    continuity_break: str | None = None  # the conversation broke at a switch (continuity.py)
    first_prompt: str | None = None  # what its title falls back to (session/naming.py)
    transcript: str | None = None  # where Claude's title for it is
    terminal: bool | None = None  # while running, as `mode`: False for a detached run

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def name(self) -> str:
        return self.happy_id or f"(pid {self.pid})"


def resolve(views: list[SessionView], selector: str | None) -> SessionView:
    """The session named by a unique prefix of its happy or Claude id; with none named, the only
    running one."""
    if selector is None:
        running_now = [view for view in views if view.running]
        if not running_now:
            raise NoSuchSessionError("no happy session is running: start one with `happy claude`")
        if len(running_now) > 1:
            names = ", ".join(view.name for view in running_now)
            raise AmbiguousSessionError(f"{len(running_now)} sessions are running ({names}): name one")
        return running_now[0]
    exact = [v for v in views if selector in (v.happy_id, v.claude_id)]
    matches = exact or [v for v in views if _starts(v.happy_id, selector) or _starts(v.claude_id, selector)]
    if not matches:
        raise NoSuchSessionError(f"no session matches {selector!r}: `happy sessions` lists them")
    if len(matches) > 1:
        names = ", ".join(view.name for view in matches[:5])
        raise AmbiguousSessionError(
            f"{selector!r} matches {len(matches)} sessions ({names}…): give more of the id"
        )
    return matches[0]


def resolve_here(views: list[SessionView], selector: str | None, cwd: str) -> SessionView:
    """For the verbs that read history (`watch`): with none named, the session of directory `cwd`
    (its running one, else the one started last), else the only running one."""
    if selector is not None:
        return resolve(views, selector)
    here = [view for view in views if view.cwd == cwd]  # running first, then the latest
    if sum(view.running for view in here) > 1:
        return resolve(here, None)  # says which are running here: name one
    if here:
        return here[0]
    try:
        return resolve(views, None)
    except NoSuchSessionError:
        raise NoSuchSessionError(
            f"no happy session is running, and none ran in {cwd}: name one (`happy sessions` lists them)"
        ) from None


def _starts(value: str | None, prefix: str) -> bool:
    return value is not None and value.startswith(prefix)


def stored_summaries(home: Path) -> list[SessionSummary]:
    if not (home / DB_NAME).exists():
        return []
    with SessionStore.open(home) as store:
        return store.session_summaries()


def stored_view(home: Path, summary: SessionSummary, facts: Facts | None, path: Path | None) -> SessionView:
    info, owner = summary.info, summary.owner
    alive = info.status == "running" and owner is not None and is_alive(owner)
    return SessionView(
        happy_id=info.id,
        claude_id=facts.claude_session_id if facts is not None else info.claude_session_id,
        state="running" if alive else ("ended" if info.status == "running" else info.status),
        mode=facts.mode if facts is not None else summary.mode if alive else None,
        cwd=info.cwd,
        pid=owner.pid if owner is not None else None,
        started_at=info.started_at,
        last_activity=summary.last_activity,
        socket=(path or socket_path(home, owner.pid)) if alive and owner is not None else None,
        continuity_break=summary.continuity_break,
        first_prompt=summary.first_prompt,
        transcript=summary.transcript,
        terminal=facts.terminal if facts is not None else summary.terminal if alive else None,
    )


def from_store(home: Path) -> list[SessionView] | None:
    """Every session as `discover` would list it, when the store describes every live launcher
    (each owns a running session whose front end it noted); None: some launcher must be asked
    (a session not named yet, or an older happy that notes no front end)."""
    views = [stored_view(home, summary, None, None) for summary in stored_summaries(home)]
    described = {view.pid for view in views if view.running and view.mode is not None}
    if any(pid not in described and running(pid) for pid in live_sockets(home)):
        return None
    return newest_first(views)


def newest_first(views: list[SessionView]) -> list[SessionView]:
    """The running sessions first, then the others, each most recently started first."""
    return sorted(views, key=lambda v: (not v.running, -v.started_at))
