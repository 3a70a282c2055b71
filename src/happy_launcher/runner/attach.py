"""`happy attach`: a session that runs without a terminal (started from the phone: the spawner's
detached `happy claude --happy-remote`) taken into the TUI here, and handed back after.

A restart, not a hand-over between processes: a process without a terminal cannot take one
over (it is in its own session, and our terminal is the shell's). So the detached run is ended
as a stop would end it (SIGTERM: it closes the open turn, ends Claude and the session), then
this process resumes its Claude session in the TUI (the same happy session, issue 16; messages
still pending in the inbound ledger go with it). A switch (Ctrl-T, a `happy send`) or a hang-up
ends the TUI as a switch does and starts the detached run again on the same Claude session;
Claude exiting (/exit) ends the session: nothing to hand back."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio

from happy_launcher.control.discovery import discover
from happy_launcher.control.views import SessionView, resolve
from happy_launcher.errors import (
    AmbiguousSessionError,
    NoSuchSessionError,
    RequestRefusedError,
    SessionEndedError,
)
from happy_launcher.home.procs import ProcessId
from happy_launcher.session.launcher import LauncherExit
from happy_launcher.spawn.registry import Registry
from happy_launcher.spawn.spawner import STOP_BOUND, Processes, claude_options, terminate


@dataclass(frozen=True, slots=True)
class Detached:
    """A session running again without a terminal."""

    happy_id: str | None
    pid: int


class Spawn(Protocol):
    """Starts `happy claude --happy-remote --resume <claude_id>` in `directory`, detached (the
    spawner's); returns once its control socket answers."""

    async def __call__(self, directory: str, claude_id: str) -> Detached: ...


def choose(
    views: list[SessionView], selector: str | None, title: Callable[[SessionView], str | None]
) -> SessionView:
    """The session to attach: named by a unique prefix of its happy or Claude id, else by its
    title; with none named, the one running session without a terminal. Refused in words if it
    has ended, runs in a terminal, or has no Claude session yet."""
    if selector is None:
        detached = [view for view in views if view.running and _detached(view)]
        if not detached:
            raise NoSuchSessionError("no session runs without a terminal: `happy sessions` lists them")
        if len(detached) > 1:
            names = ", ".join(view.name for view in detached)
            raise AmbiguousSessionError(
                f"{len(detached)} sessions run without a terminal ({names}): name one"
            )
        return _takeable(detached[0])
    try:
        return _takeable(resolve(views, selector))
    except NoSuchSessionError:
        titled = [view for view in views if title(view) == selector]
        if len(titled) != 1:
            raise
        return _takeable(titled[0])


def _takeable(view: SessionView) -> SessionView:
    if not view.running:
        again = f": continue it with `happy claude --resume {view.claude_id}`" if view.claude_id else ""
        raise SessionEndedError(f"session {view.name} has ended ({view.state}){again}")
    if view.mode is None:
        raise RequestRefusedError(
            f"session {view.name} does not answer (pid {view.pid}): try again in a moment"
        )
    if view.mode == "headless":
        raise RequestRefusedError(
            f"session {view.name} runs Claude on happy's own stdio (-p, or no terminal): it can be "
            "watched, not attached"
        )
    if not _detached(view):
        raise RequestRefusedError(
            f"session {view.name} runs in a terminal already (pid {view.pid}): use it there, "
            "or `happy switch` it"
        )
    if view.claude_id is None:
        raise RequestRefusedError(f"session {view.name} has no Claude session yet: try again in a moment")
    return view


def _detached(view: SessionView) -> bool:
    return view.mode == "remote" and view.terminal is False


@dataclass(frozen=True, slots=True)
class Taken:
    """The session taken, with the options its detached run was started with (the spawner's
    registry: none for a run started otherwise), for the TUI and the hand-back alike."""

    view: SessionView
    model: str | None = None
    permission_mode: str | None = None

    def options(self) -> list[str]:
        """As `happy claude` options."""
        return claude_options(self.permission_mode, self.model)


async def take_over(
    home: Path, selector: str | None, processes: Processes, *, bound: float = STOP_BOUND
) -> Taken:
    """End the detached run of the chosen session (SIGTERM; SIGKILL to its group after `bound`)
    and return it: its Claude session is free for the TUI once this returns."""
    from happy_launcher.session.naming import TranscriptTitles, session_title

    reader = TranscriptTitles()
    view = choose(
        await discover(home), selector, lambda v: session_title(v.first_prompt, v.transcript, reader)
    )
    assert view.pid is not None  # running: its launcher's pid is known
    owner = ProcessId(view.pid, processes.start_time(view.pid))
    entry = await anyio.to_thread.run_sync(Registry(home, processes.alive).of, owner)
    await terminate(processes, owner, bound)
    if entry is None:
        return Taken(view)
    return Taken(view, entry.model, entry.permission_mode)


def hands_back(exit: LauncherExit, ended_by: int | None) -> bool:
    """Whether the attached run ends by handing its session back: a switch (Ctrl-T, a message
    sent with `happy send`), or the terminal closing (SIGHUP). Any other ending signal, or
    Claude exiting, ends the session."""
    if ended_by is not None:
        return ended_by == signal.SIGHUP
    return exit.reason == "switch"


async def after_attached(
    view: SessionView, spawn: Spawn, claude_id: str | None, exit: LauncherExit, ended_by: int | None
) -> int | None:
    """After the attached run has ended: hand the session back (exit code 0, said in one line),
    or None when it ends here (the run's own exit code holds)."""
    if not hands_back(exit, ended_by):
        return None
    claude_id = claude_id or view.claude_id
    assert claude_id is not None  # `choose` takes only a session with one
    try:
        detached = await spawn(view.cwd, claude_id)
    except Exception as exc:
        _say(f"handing the session back failed ({exc}): continue it with `happy claude --resume {claude_id}`")
        return 1
    name = detached.happy_id or view.name
    _say(f"session {name} runs on without a terminal (pid {detached.pid}): `happy attach` takes it again")
    return 0


def _say(line: str) -> None:
    with contextlib.suppress(OSError):  # after a hang-up there is no terminal to say it on
        sys.stderr.write(f"happy: {line}\n")
        sys.stderr.flush()
