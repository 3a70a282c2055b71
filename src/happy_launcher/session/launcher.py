"""What every launcher (local: Claude's TUI under our PTY or on our stdio; remote: Claude through
the Agent SDK) shares with the session loop: the session it drives and how it ended.

"The launcher ended" and "the session ended" are different steps: a launcher says why it
stopped (`LauncherExit`), and the loop decides whether the session goes on with another
launcher (a switch) or ends, and with which status. Light to import: the local launcher spawns
Claude before the session's store, mapper and sinks are loaded (`Run`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from happy_launcher.session.events_output import EventsOutput

if TYPE_CHECKING:
    from collections.abc import Callable

    from happy_launcher.protocol import TurnStatus
    from happy_launcher.session.core import Session
    from happy_launcher.session.permissions import PermissionBroker
    from happy_launcher.session.ports import InputMode, Mode
    from happy_launcher.session.signals import RunSignals
    from happy_launcher.session.tui_permissions import LocalPermissions
    from happy_launcher.terminal.guard import SignalReceiver

_log = logging.getLogger(__name__)

ExitReason = Literal["exited", "switch", "aborted"]


@dataclass(frozen=True, slots=True)
class LauncherExit:
    """Why a launcher stopped: Claude `exited` with `code` (a signal: 128 + it), a `switch` to
    the other launcher was asked for, or the user `aborted` (a signal to happy). A launcher
    that fails raises instead; the loop then ends the session `failed`."""

    reason: ExitReason
    code: int = 0
    stopped_by_us: bool = False  # Claude was interrupted or killed by us / the user's signal

    @property
    def status(self) -> TurnStatus:
        """How the session's open turn ends when the session ends here (design §3)."""
        if self.reason == "aborted" or self.stopped_by_us:
            return "cancelled"
        return "completed" if self.code == 0 else "failed"


class ClaudeStart(NamedTuple):
    """The Claude session a run's first launch runs on, known before the spawn, named as its
    SessionStart hook will name it."""

    session_id: str
    source: str
    transcript: Path


class Front(Protocol):
    """What the session's controller (the control socket) can ask of the launcher that drives
    Claude now. Each launcher puts its front in `Run.front` while it runs."""

    @property
    def mode(self) -> Mode: ...

    @property
    def busy(self) -> bool: ...

    def check_inbound(self) -> None:
        """ControlRefused if this front takes no messages for Claude (checked before storing one)."""
        ...

    def request_switch(self) -> None:
        """Hand the session over to the other launcher (ControlRefused if it cannot be done)."""
        ...

    async def abort(self) -> None: ...

    def inbound(self) -> None:
        """A message for Claude was stored: deliver it (remote), or switch to deliver it (local)."""
        ...


class Run:
    """One `happy claude` run, whichever launchers drive it: its session, opened on first
    `get()` (after Claude is spawned, in local mode) and then the same object for every launcher
    of the run, its permission broker, its signals and the front that drives Claude now. A
    failure to open the session is kept (and raised again by the next `get()`): the caller
    decides whether Claude goes on unmirrored. Once `end()` has ended it, `get()` refuses.
    `front`: the running launcher's, for the controller (None between launchers).
    `signals`: the run's, once it catches them (`session.signals`).
    `remote_input`: how the TUI takes a message sent without a mode (--happy-remote-input).
    `starts_on`: the Claude session the run starts on, when known before the spawn: the session
    is bound to it as it opens, so a resume continues its happy session whatever Claude writes
    first (metadata it re-writes, its SessionStart hook arriving late) and whatever comes first
    from a client. `replay`: the run re-sends the history (`Session`)."""

    def __init__(
        self,
        home: Path,
        cwd: Path,
        *,
        events: EventsOutput | None = None,
        remote_input: InputMode = "switch",
        starts_on: ClaudeStart | None = None,
        replay: bool = False,
    ) -> None:
        self.home = home
        self._starts_on = starts_on
        self._replay = replay
        self.cwd = cwd
        self.events = events
        self.remote_input: InputMode = remote_input
        self._session: Session | None = None
        self._ended = False
        self.claude_session_id: str | None = None  # the last one the session ran on, once ended
        self.failure: Exception | None = None
        self.front: Front | None = None
        self.signals: RunSignals | None = None
        self._permissions: PermissionBroker | None = None
        self._local_permissions: LocalPermissions | None = None
        self._on_open: list[Callable[[Session], None]] = []

    def get(self) -> Session:
        if self._session is None:
            if self._ended:
                # A client that comes between the run's end and its socket's close (the bridge,
                # a watch, the page) must not open the session again: that would reopen it, or
                # bind a new one to the same Claude session.
                from happy_launcher.session.ports import SessionOver

                raise SessionOver("the session has ended: its happy claude is exiting")
            if self.failure is not None:
                raise self.failure
            from happy_launcher.session.core import Session  # heavy: store, mapper, sqlite3

            try:
                self._session = self._open(Session)
            except Exception as exc:
                self.failure = exc
                raise
            for callback in self._on_open:
                callback(self._session)
        return self._session

    def when_open(self, callback: Callable[[Session], None]) -> None:
        """Call `callback` with the session once it is opened (now, if it is)."""
        if self._session is not None:
            callback(self._session)
        else:
            self._on_open.append(callback)

    def _open(self, make: type[Session]) -> Session:
        session = make(self.home, self.cwd, events=self.events, replay=self._replay)
        if self._starts_on is not None:
            try:
                session.set_claude_session(*self._starts_on)
            except BaseException:
                session.close()
                raise
        return session

    @property
    def receive_signals(self) -> SignalReceiver:
        """What a launcher's parts open to get signals: the run's, if it catches them."""
        if self.signals is not None:
            return self.signals.listen
        import anyio

        return anyio.open_signal_receiver

    @property
    def permissions(self) -> PermissionBroker:
        """The run's pending permission requests: one broker for every launcher of the run, so
        that a client watching them subscribes once."""
        if self._permissions is None:
            from happy_launcher.protocol import Cuid2Ids
            from happy_launcher.session.permissions import PermissionBroker

            self._permissions = PermissionBroker(Cuid2Ids())
        return self._permissions

    @property
    def local_permissions(self) -> LocalPermissions:
        """The TUI's permission requests (its PermissionRequest hook), kept in `permissions`."""
        if self._local_permissions is None:
            from happy_launcher.session.tui_permissions import LocalPermissions

            self._local_permissions = LocalPermissions(self.permissions)
        return self._local_permissions

    @property
    def opened(self) -> Session | None:
        """The session if it was opened already (never opens it)."""
        return self._session

    def end(self, status: TurnStatus) -> list[str]:
        """End and close the session, if it was opened; never raises (a failure is kept in
        `failure` and logged). Returns "<sink>: <error>" for each best-effort sink that failed."""
        session, self._session = self._session, None
        self._ended = True
        if session is None:
            return []
        self.claude_session_id = session.claude_session_id
        try:
            session.end(status)
        except Exception as exc:
            _log.error("ending the session failed", exc_info=exc)
            self.failure = self.failure or exc
        finally:
            session.close()
        stats = session.stats
        return [] if stats is None else list(stats.failures)


class Launcher(Protocol):
    """Drives Claude until it exits or is asked to stop; `session` None: not mirrored."""

    async def run(self, session: Run | None) -> LauncherExit: ...


class FirstLauncher(Launcher, Protocol):
    """The launcher a run starts with, in any mode. `start` needs no event loop: it spawns
    Claude (or refuses what cannot run) before the event loop and the session are even imported;
    `run` takes it over; `close` ends what `run` never took over."""

    @property
    def claude_start(self) -> ClaudeStart | None:
        """The Claude session the run is bound to as it opens, when known before the spawn."""
        ...

    def start(self) -> None: ...

    def close(self) -> None: ...
