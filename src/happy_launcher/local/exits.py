"""How a Claude process ended, as the mirror needs to know it. Light on purpose: the mirror of a
headless run must not import the PTY machinery to read it."""

from __future__ import annotations

from typing import NamedTuple


class ChildExit(NamedTuple):
    code: int  # shell-style: exit status, or 128+signal if killed by a signal
    signal: int | None  # the signal that killed it, if any
    stopped_by_us: bool  # True when we terminated it (stop()/signal forwarding of SIGTERM/SIGHUP)
