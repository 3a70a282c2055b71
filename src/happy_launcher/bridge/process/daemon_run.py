"""The bridge's process, in the foreground (`python -m happy_launcher.bridge.process.daemon_run`), as
`happy daemon start` and `happy claude` start it. It holds `daemon.lock` for its life (a second
one exits at once), keeps `daemon.pid` and the status file, logs to `daemon.log`, and serves
until SIGTERM or SIGINT. It is only a
client (of Happy's server, of the sessions' sockets and the store): no session depends on it."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import anyio
from anyio import CancelScope

from happy_launcher.bridge.keys.credentials import new_machine_id, read_credentials, read_machine_id
from happy_launcher.bridge.keys.server import server_url
from happy_launcher.bridge.process.daemon import LOCK_FILE, LOG_FILE, READY, remove_pid_file, write_pid_file
from happy_launcher.bridge.process.report import Report
from happy_launcher.bridge.process.service import BridgeContext, Serve
from happy_launcher.errors import HappyError, unwrap
from happy_launcher.home.dirs import ensure_home
from happy_launcher.home.logfile import log_to
from happy_launcher.home.procs import this_process

log = logging.getLogger("happy_launcher.bridge.process.daemon_run")  # not __name__: run as __main__


def run(home: Path, env: Mapping[str, str], serve: Serve, *, ready_fd: int | None = None) -> int:
    """Serve until a signal; 0 then, or when another bridge runs here; 1 if it cannot serve."""
    lock = _lock(home)
    if lock is None:
        log.info("another bridge runs for %s", home)
        return 0
    try:
        log_to(home, LOG_FILE)
        os.chdir(home)  # never keep the directory of the session that started it busy
        return _serve(home, env, serve, ready_fd)
    finally:
        os.close(lock)


def _lock(home: Path) -> int | None:
    """daemon.lock, held (the kernel lets it go when the process ends, however it ends)."""
    ensure_home(home)
    fd = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _serve(home: Path, env: Mapping[str, str], serve: Serve, ready_fd: int | None) -> int:
    try:
        credentials = read_credentials(home)
        if credentials is None:
            log.error("not logged in: run `happy auth login`")
            return 1
        machine_id = read_machine_id(home) or new_machine_id(home)
    except HappyError as error:
        log.error("%s", error)  # noqa: TRY400 - one line says it all
        return 1
    me = this_process(os.getpid())
    server = server_url(None, env)
    report = Report(home, pid=me.pid, server=server, clock=time.time, on_settled=_ready(ready_fd))
    write_pid_file(home, me)
    log.info("bridge started (pid %d, server %s, machine %s)", me.pid, server, machine_id)
    ctx = BridgeContext(home, server, credentials, machine_id, report)
    try:
        anyio.run(functools.partial(serve_until_signalled, serve, ctx))
    except Exception as exc:  # any failure of the work: its traceback logged, one line in the status
        failure = unwrap(exc)
        log.exception("the bridge failed")
        report.state("stopped", f"failed: {type(failure).__name__}: {failure}")
        return 1
    finally:
        remove_pid_file(home, me)
    report.state("stopped")
    return 0


def _ready(fd: int | None) -> functools.partial[None] | None:
    return None if fd is None else functools.partial(_say_ready, fd)


def _say_ready(fd: int) -> None:
    """Tell `happy daemon start` the first state is known (it may have gone: nothing to tell)."""
    with contextlib.suppress(OSError):
        os.write(fd, READY)
    with contextlib.suppress(OSError):
        os.close(fd)


async def serve_until_signalled(serve: Serve, ctx: BridgeContext) -> None:
    """Run `serve` until SIGTERM or SIGINT (or until it returns)."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, signals, tg.cancel_scope)
            await serve(ctx)
            tg.cancel_scope.cancel()


async def _stop_on_signal(signals: AsyncIterator[int], scope: CancelScope) -> None:
    async for signum in signals:
        log.info("stopping on %s", signal.Signals(signum).name)
        scope.cancel()
        return


def main(argv: list[str]) -> int:
    """The bridge's process (`python -m happy_launcher.bridge.process.daemon_run [--ready-fd N]`, as
    `happy daemon start` spawns it): no CLI framework, nothing the bridge does not use."""
    import argparse
    import sys
    import types

    # httpx imports its own command-line tool, and with it rich, click and pygments: ~6 MB the
    # bridge never uses (its memory target is 60 MB).
    cli = types.ModuleType("httpx._main")
    cli.main = lambda: None  # type: ignore[attr-defined]
    sys.modules.setdefault("httpx._main", cli)
    parser = argparse.ArgumentParser(prog="happy_launcher.bridge.process.daemon_run")
    parser.add_argument("--ready-fd", type=int, default=None)
    ready_fd = parser.parse_args(argv).ready_fd
    from happy_launcher.bridge.process.service import serve
    from happy_launcher.home.dirs import happy_home

    try:
        return run(happy_home(os.environ), os.environ, serve, ready_fd=ready_fd)
    except HappyError as error:
        sys.stderr.write(f"happy: {error}\n")
        return error.exit_code


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
