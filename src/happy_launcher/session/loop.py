"""The session loop: one session for the whole `happy claude` run, driven by one launcher at a
time, ended once, after the last launcher (design §5). Switching launchers mid-session builds on
this (the next launcher runs when one stops with `switch`)."""

from __future__ import annotations

import sys

from happy_launcher.session.launcher import Launcher, LauncherExit, SessionRef


async def run_session(ref: SessionRef | None, launcher: Launcher) -> LauncherExit:
    """Run `launcher` on the session, then end the session with the status its exit implies.
    `ref` None: this run is not mirrored (happy's home is unusable, already said)."""
    if ref is None:
        return await launcher.run(None)
    exit: LauncherExit | None = None
    try:
        exit = await launcher.run(ref)
    finally:
        failure = getattr(launcher, "failure", None)  # mirroring failed while Claude ran on
        end_session(ref, exit, launcher_failure=failure if isinstance(failure, Exception) else None)
    return exit


def end_session(
    ref: SessionRef, exit: LauncherExit | None, *, launcher_failure: Exception | None = None
) -> None:
    """End the session (no exit: the launcher itself failed, so `failed`) and tell the user, in
    one line each, what did not work out: a best-effort sink, or mirroring as a whole."""
    for sink in ref.end(exit.status if exit is not None else "failed"):
        sys.stderr.write(f"happy: {sink}: envelopes from then on were not written there\n")
    failure = launcher_failure if launcher_failure is not None else ref.failure
    if failure is not None:
        sys.stderr.write(f"happy: mirroring this session failed: {failure} (details in happy.log)\n")
