"""Where `--happy-events` writes: a file, or a file descriptor the caller opened (`fd:N`).

Opened before Claude starts, so a bad value is one clear line and exit 2, never a session that
silently mirrors nowhere. Never stdout: in `happy claude` it is Claude's (its TUI, or its `-p`
output), and envelopes mixed into it would corrupt both.
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple

from happy_launcher.errors import UsageError

_FD_PREFIX = "fd:"
_HINT = "give a file path, or fd:N for a descriptor you opened (e.g. `--happy-events fd:3 3>events.jsonl`)"


class EventsOutput(NamedTuple):
    fd: int
    name: str  # for messages: "events file PATH" or "events fd:N"
    owned: bool  # opened by us, so closed by us
    # A regular file: written in line, as the store is (a thread woken per batch costs more than
    # the write); anything else (a pipe, a socket) may have a slow reader: from a thread.
    regular: bool = False

    def close(self) -> None:
        if self.owned:
            os.close(self.fd)


def open_events_output(spec: str) -> EventsOutput:
    """Open the `--happy-events` target `spec`, or raise UsageError saying what to give instead."""
    if spec == "-":
        raise UsageError(f"--happy-events - would mix envelopes into Claude's own output: {_HINT}")
    if spec.startswith(_FD_PREFIX):
        return _inherited_fd(spec)
    try:
        # 0600: the events carry the whole conversation, like the store. Appending: a relaunch
        # or a second run adds to the file, never truncates it.
        fd = os.open(spec, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise UsageError(f"cannot open events file {spec} ({exc.strerror or exc}): {_HINT}") from None
    return EventsOutput(fd, f"events file {spec}", owned=True, regular=_is_regular(fd))


def _inherited_fd(spec: str) -> EventsOutput:
    number = spec[len(_FD_PREFIX) :]
    if not number.isdigit():
        raise UsageError(f"--happy-events {spec}: N in fd:N must be a number: {_HINT}")
    import fcntl  # only for this form: the module is loaded before Claude starts

    fd = int(number)
    if fd <= 2:
        raise UsageError(f"--happy-events {spec}: fd 0-2 belong to Claude: use fd:3 or higher")
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        raise UsageError(f"--happy-events {spec}: fd {fd} is not open: {_HINT}") from None
    if flags & os.O_ACCMODE == os.O_RDONLY:
        raise UsageError(f"--happy-events {spec}: fd {fd} is open for reading only: {_HINT}")
    # It is ours: Claude (and what it leaves running) must not hold the reader's pipe open.
    os.set_inheritable(fd, False)
    return EventsOutput(fd, f"events {spec}", owned=False, regular=_is_regular(fd))


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)
