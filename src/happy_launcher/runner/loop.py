"""The session loop: one session for the whole `happy claude` run, driven by one launcher at a
time, ended once, after the last launcher (design §5). A launcher that stops with `switch` hands
the same Claude session to the other mode's launcher."""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Protocol

from happy_launcher.session.launcher import Launcher, LauncherExit, Run
from happy_launcher.session.ports import Mode

_log = logging.getLogger(__name__)


class Modes(Protocol):
    """Makes the launcher that takes over a switch: `mode` on Claude session `claude_session_id`."""

    def launcher(self, mode: Mode, claude_session_id: str) -> Launcher: ...


class Switching(Protocol):
    """Told about each hand-over (the controller: continuity checks, the socket's facts)."""

    def switching(self, to: Mode) -> None: ...


async def run_session(
    ref: Run | None,
    launcher: Launcher,
    *,
    mode: Mode = "local",
    modes: Modes | None = None,
    switching: Switching | None = None,
) -> LauncherExit:
    """Run `launcher` (in `mode`) on the session, then each launcher a switch asks for (with
    `modes`), then end the session with the status the last exit implies. Remote mode failing
    after a switch hands the session back to the TUI. A signal the run caught (`ref.signals`)
    ends it after the launcher it stopped, whatever that launcher said: a switch is abandoned.
    `ref` None: this run is not mirrored (happy's home is unusable, already said), so it cannot
    switch either."""
    if ref is None:
        return await launcher.run(None)
    exit: LauncherExit | None = None
    switched = False
    try:
        while True:
            exit = await _run_launcher(
                ref, launcher, fall_back=switched and mode == "remote" and modes is not None
            )
            ended_by = ref.signals.ended_by if ref.signals is not None else None
            if ended_by is not None:
                exit = LauncherExit("aborted", code=128 + ended_by)
                break
            claude_id = ref.opened.claude_session_id if ref.opened is not None else None
            if exit.reason != "switch" or modes is None or claude_id is None:
                break
            mode, switched = ("remote" if mode == "local" else "local"), True
            if switching is not None:
                switching.switching(mode)
            launcher = modes.launcher(mode, claude_id)
    finally:
        failure = getattr(launcher, "failure", None)  # mirroring failed while Claude ran on
        end_session(ref, exit, launcher_failure=failure if isinstance(failure, Exception) else None)
    return exit


async def _run_launcher(ref: Run, launcher: Launcher, *, fall_back: bool) -> LauncherExit:
    """One launcher's run, or `aborted` if a signal stopped it (`RunSignals.running`; the loop
    tells which). `fall_back`: a failure means a switch back to the TUI."""
    with ref.signals.running() if ref.signals is not None else contextlib.nullcontext():
        try:
            return await launcher.run(ref)
        except Exception as exc:
            if not fall_back:
                raise
            # The terminal's user loses nothing: the session goes on in the TUI.
            _log.error("remote mode failed after a switch", exc_info=exc)
            sys.stderr.write(f"happy: remote mode failed ({exc}); back to local mode\n")
            return LauncherExit("switch")
    return LauncherExit("aborted")


def end_session(ref: Run, exit: LauncherExit | None, *, launcher_failure: Exception | None = None) -> None:
    """End the session (no exit: the launcher itself failed, so `failed`) and tell the user, in
    one line each, what did not work out: a best-effort sink, or mirroring as a whole."""
    for sink in ref.end(exit.status if exit is not None else "failed"):
        sys.stderr.write(f"happy: {sink}: envelopes from then on were not written there\n")
    failure = launcher_failure if launcher_failure is not None else ref.failure
    if failure is not None:
        sys.stderr.write(f"happy: mirroring this session failed: {failure} (details in happy.log)\n")
