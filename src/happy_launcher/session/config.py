"""The configuration of one `happy claude` run, in any mode. Light: it is built before Claude starts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from happy_launcher.claude.args import ClaudeArgs
from happy_launcher.session.events_output import EventsOutput


class RunConfig(NamedTuple):
    args: ClaudeArgs
    binary: Path
    env: Mapping[str, str]
    cwd: Path
    home: Path | None  # happy's state directory; None: this run is not mirrored
    events: EventsOutput | None = None  # --happy-events, opened before Claude starts
    stdin_fd: int = 0
    stdout_fd: int = 1
