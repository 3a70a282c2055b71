"""The control socket of a running session (design §5; protocol: docs/control-protocol.md).

`serve` listens on `<home>/control/<pid>.sock` until cancelled, then removes it; each client is
served by `control_connection.py`, loaded with the protocol's models at the first connection, so
that a session nobody connects to never loads them (pydantic: ~100 ms of CPU at start-up)."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import anyio
from anyio.abc import TaskStatus

from happy_launcher.control.link import Link, ServerLimits, accept, cancel_on
from happy_launcher.control.sockets import bind_private, make_control_dir, remove_dead
from happy_launcher.home.dirs import socket_path
from happy_launcher.session.ports import Controller

_log = logging.getLogger(__name__)
_ACCEPT_RETRY = 0.1  # seconds to wait after a failed accept (out of file descriptors)


async def serve(
    controller: Controller,
    home: Path,
    *,
    task_status: TaskStatus[Path] = anyio.TASK_STATUS_IGNORED,
    allowed_uid: int | None = None,
    limits: ServerLimits = ServerLimits(),
    stop: anyio.Event | None = None,
) -> None:
    """Serve the control socket until cancelled, or until `stop` is set (`await tg.start(serve,
    controller, home)` returns its path once it accepts connections). A stop is graceful: no new
    clients, and each client gets what it is owed (the session's last envelopes) within
    `limits.grace` before it is closed. `allowed_uid`: whose connections are served (default
    ours); anyone else gets a `refused` error and is disconnected."""
    uid = os.getuid() if allowed_uid is None else allowed_uid
    make_control_dir(home)
    remove_dead(home)
    path = socket_path(home, controller.facts().pid)
    listener = bind_private(path)
    listener.setblocking(False)
    try:
        stop = stop if stop is not None else anyio.Event()
        async with anyio.create_task_group() as tg:
            task_status.started(path)
            with anyio.CancelScope() as accepting:
                tg.start_soon(cancel_on, stop, accepting)
                while True:
                    try:
                        sock = await accept(listener)
                    except OSError as exc:  # EMFILE and the like: the session goes on, and so do we
                        _log.warning("control socket %s: accept failed (%s)", path, exc)
                        await anyio.sleep(_ACCEPT_RETRY)
                        continue
                    from happy_launcher.control.connection import serve_client

                    tg.start_soon(serve_client, Link(sock), controller, uid, limits, stop)
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            path.unlink()
