"""The control socket of a running session (design §5; protocol: docs/control-protocol.md).

`serve` listens on `<home>/control/<pid>.sock` until cancelled, then removes it; each client is
served by `control_connection.py`, loaded with the protocol's models (pydantic: ~100 ms of CPU)
not at start-up but `warm_after` seconds later, in a worker thread: a short run (`-p`) never loads
them, and `happy sessions` finds a session that has run a while ready to answer at once instead
of paying for them at its first connection (30 such sessions cost seconds of CPU at once)."""

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
WARM_AFTER = 2.0  # seconds after the socket is up: past Claude's start and a short headless run


async def serve(
    controller: Controller,
    home: Path,
    *,
    task_status: TaskStatus[Path] = anyio.TASK_STATUS_IGNORED,
    allowed_uid: int | None = None,
    limits: ServerLimits = ServerLimits(),
    stop: anyio.Event | None = None,
    warm_after: float | None = WARM_AFTER,
) -> None:
    """Serve the control socket until cancelled, or until `stop` is set (`await tg.start(serve,
    controller, home)` returns its path once it accepts connections). A stop is graceful: no new
    clients, and each client gets what it is owed (the session's last envelopes) within
    `limits.grace` before it is closed. `allowed_uid`: whose connections are served (default
    ours); anyone else gets a `refused` error and is disconnected. `warm_after` None: the protocol's
    models load at the first connection only."""
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
            if warm_after is not None:
                tg.start_soon(_warm_up, warm_after, stop)
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


async def _warm_up(after: float, stop: anyio.Event) -> None:
    """What serving a client loads, loaded `after` seconds from now (unless the server stops first)
    in a worker thread: the event loop, the mirror's, runs on meanwhile."""
    with anyio.move_on_after(after):
        await stop.wait()
    if not stop.is_set():
        await anyio.to_thread.run_sync(load_protocol)


def load_protocol() -> None:
    """What serving a client needs (the protocol's models), loaded now: blocking, ~100 ms of CPU."""
    from happy_launcher.control.connection import serve_client  # noqa: F401 (loaded for later)
    from happy_launcher.control.framing import parse_request

    parse_request(b'{"type":"hello","id":"warm","versions":[1]}')  # builds the requests' schemas
