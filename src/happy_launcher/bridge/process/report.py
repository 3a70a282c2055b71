"""The bridge's status file, `HAPPY_HOME_DIR/daemon.json` (0600, replaced atomically): what
`happy daemon status` shows. The bridge writes it through `Report`, which also logs each change
of state or error as one line."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

from happy_launcher.home.files import write_private

STATUS_FILE = "daemon.json"
State = Literal["starting", "connected", "offline", "unauthorized", "stopped"]
STATES: tuple[str, ...] = get_args(State)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DaemonStatus:
    pid: int
    started_at: str  # ISO 8601, UTC
    server: str
    state: State
    last_error: str | None  # one line, never a token or key
    updated_at: str

    def line(self) -> str:
        """The state and its error in one line, as `happy daemon status` shows it."""
        return self.state if self.last_error is None else f"{self.state}: {self.last_error}"


class Report:
    """The bridge's state as it changes. `on_settled` runs once, at the first state after
    "starting" (`happy daemon start` waits for it)."""

    def __init__(
        self,
        home: Path,
        *,
        pid: int,
        server: str,
        clock: Callable[[], float],
        on_settled: Callable[[], None] | None = None,
    ) -> None:
        self._path = home / STATUS_FILE
        self._clock = clock
        self._on_settled = on_settled
        now = self._now()
        self.current = DaemonStatus(pid, now, server, "starting", None, now)
        self._write()

    def state(self, state: State, error: str | None = None) -> None:
        """Enter `state`; `error` (one line) is why, or None for no error."""
        self._change(state, error)
        if state != "starting" and self._on_settled is not None:
            settled, self._on_settled = self._on_settled, None
            settled()

    def error(self, text: str) -> None:
        """An error that leaves the state as it is."""
        self._change(self.current.state, text)

    def _change(self, state: State, error: str | None) -> None:
        error = None if error is None else " ".join(error.split())  # one line, whatever it quotes
        if (state, error) == (self.current.state, self.current.last_error):
            return  # the same again (a retry): neither written nor logged
        self.current = replace(self.current, state=state, last_error=error, updated_at=self._now())
        log.info("%s", self.current.line())
        self._write()

    def _now(self) -> str:
        return datetime.fromtimestamp(self._clock(), UTC).isoformat(timespec="seconds")

    def _write(self) -> None:
        try:
            write_private(self._path, json.dumps(asdict(self.current), indent=2).encode())
        except OSError as exc:  # status is for the user's eyes: the bridge goes on without it
            log.warning("cannot write %s: %s", self._path, exc.strerror)


def read_status(home: Path) -> DaemonStatus | None:
    """What daemon.json says; None if there is none or it cannot be read as one."""
    try:
        body = json.loads((home / STATUS_FILE).read_bytes())
        status = DaemonStatus(**body)
    except (OSError, ValueError, TypeError):
        return None
    return status if status.state in STATES and isinstance(status.pid, int) else None
