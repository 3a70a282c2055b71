"""Writing to raw file descriptors (the terminal, a pipe, an events file): shared by local/ and
session/, so it sits below both and imports nothing of ours."""

from __future__ import annotations

import os
import select


def write_all(fd: int, data: bytes) -> None:
    """Write every byte, looping on partial writes.

    Blocking is intended (a slow reader slows the writer, like a direct run); an fd left
    non-blocking by another process sharing it (a terminal, a pipe) is waited on instead of
    failing with BlockingIOError.
    """
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            _wait_writable(fd)


def _wait_writable(fd: int) -> None:
    # poll, not select: select cannot wait on a descriptor numbered 1024 or above (`fd:N`).
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    poller.poll()
