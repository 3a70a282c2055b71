"""Run a command through our PTY so that it feels exactly like running it directly.

`run_passthrough` is what `happy claude` calls: raw terminal, the child under a PTY, window
size changes and signals relayed, Ctrl-Z job control, the exit code returned and the terminal
restored on every path. `python -m happy_launcher.local.passthrough -- CMD ARGS...` runs any
command that way.
"""

from __future__ import annotations

import functools
import logging
import os
import pathlib
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

import anyio
import anyio.abc

from happy_launcher.local.exits import ChildExit
from happy_launcher.local.job_control import JobControl, UserTerminal
from happy_launcher.local.pty_session import PtySession
from happy_launcher.local.pty_start import RELAYED_SIGNALS, StartedPty
from happy_launcher.terminal.guard import SignalReceiver, TerminalGuard, terminal_size

_log = logging.getLogger(__name__)
_INTERRUPT_GRACE = 3.0  # after a SIGINT/SIGQUIT we pass on, the child has this long to exit
_USAGE = "usage: python -m happy_launcher.local.passthrough -- CMD [ARGS...]"


async def run_passthrough(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    on_started: Callable[[PtySession], Awaitable[None]] | None = None,
    on_output: Callable[[bytes], None] | None = None,
    started: StartedPty | None = None,
    signals: SignalReceiver = anyio.open_signal_receiver,
    on_ctrl_t: Callable[[], None] | None = None,
) -> ChildExit:
    """Run `argv` under a PTY wired to our terminal until it exits, and return its exit.

    `on_started(session)` runs as a task beside the child once it is spawned and is cancelled
    when the child exits; if it raises, the child is stopped and the exception propagates.
    `on_output` sees every output chunk, from the pump thread (see `PtySession`). SIGWINCH
    resizes the child, SIGCHLD/SIGCONT drive job control. SIGTERM and SIGHUP stop the child;
    SIGINT and SIGQUIT are forwarded to its foreground job, then stop it if it has not exited
    within a grace period. After any of these the result is `stopped_by_us` and its code is
    128 + that signal, as if it had ended us.
    Failures propagate unwrapped when a single exception is behind them.
    `started`: `argv` already runs (`start_pty`, with the relayed signals blocked until here).
    `signals`: where the signals come from (the run's, when happy runs several launchers).
    `on_ctrl_t`: Ctrl-T is happy's, not the child's (`happy attach`: hand the session back).
    """
    try:
        return await _run(
            argv, env, cwd, stdin_fd, stdout_fd, on_started, on_output, started, signals, on_ctrl_t
        )
    except BaseException:
        if started is not None:  # failed before the PTY session took it over: end it
            started.abandon()
        raise


async def _run(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    stdin_fd: int,
    stdout_fd: int,
    on_started: Callable[[PtySession], Awaitable[None]] | None,
    on_output: Callable[[bytes], None] | None,
    started: StartedPty | None,
    receiver: SignalReceiver,
    on_ctrl_t: Callable[[], None] | None,
) -> ChildExit:
    # Signals are caught before the terminal goes raw, so none can kill us with it left raw.
    with (
        receiver(*RELAYED_SIGNALS) as signals,
        TerminalGuard(stdin_fd, stdout_fd) as guard,
    ):
        if started is not None:  # caught from here on: what arrived meanwhile is delivered now
            signal.pthread_sigmask(signal.SIG_SETMASK, started.signal_mask)
        session = PtySession(
            argv,
            env=env,
            cwd=cwd,
            stdin_fd=stdin_fd,
            stdout_fd=stdout_fd,
            on_output=guard.observe if on_output is None else _Tee(guard.observe, on_output),
            child_attrs=guard.saved_attrs,
            started=started,
            on_ctrl_t=on_ctrl_t,
        )
        outcome: list[ChildExit] = []
        relay = _SignalRelay(session, JobControl(session, UserTerminal(guard, stdin_fd, stdout_fd)))
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(_run_child, session, outcome, tg.cancel_scope)
                tg.start_soon(relay.run, signals, tg, (stdout_fd, stdin_fd))
                if on_started is not None:
                    tg.start_soon(_call, on_started, session)
        except BaseExceptionGroup as group:
            leaf = _single_leaf(group)
            if leaf is None:
                raise
            raise leaf from None
    return relay.outcome(outcome[0])


async def _run_child(
    session: PtySession,
    outcome: list[ChildExit],
    scope: anyio.CancelScope,
    *,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    outcome.append(await session.run(task_status=task_status))
    scope.cancel()  # the child is gone: the signal relay and on_started have nothing left to do


class _SignalRelay:
    """Acts on the signals we receive while the child runs, and remembers the one that ended us."""

    def __init__(self, session: PtySession, job: JobControl) -> None:
        self._session = session
        self._job = job
        self._ended_by: int | None = None

    def outcome(self, child: ChildExit) -> ChildExit:
        if self._ended_by is None:
            return child
        return child._replace(code=128 + self._ended_by, stopped_by_us=True)

    async def run(
        self, signals: AsyncIterator[signal.Signals], tg: anyio.abc.TaskGroup, size_fds: tuple[int, int]
    ) -> None:
        session = self._session
        async for sig in signals:
            if sig == signal.SIGWINCH:
                session.resize(*terminal_size(*size_fds))
            elif sig == signal.SIGCHLD:
                if session.child_stopped():
                    await self._job.child_stopped()
            elif sig == signal.SIGCONT:
                if self._job.continued():
                    tg.start_soon(self._job.stop_again)
            else:
                self._end(sig, tg)

    def _end(self, sig: int, tg: anyio.abc.TaskGroup) -> None:
        """SIGINT/SIGQUIT/SIGTERM/SIGHUP: we are being ended, so the child goes first. In its own
        task, so that later signals (a second SIGTERM, SIGWINCH) are still handled meanwhile."""
        if self._ended_by is None:
            self._ended_by = sig
        self._job.end()
        if sig in (signal.SIGINT, signal.SIGQUIT):
            tg.start_soon(self._interrupt, sig)
        else:
            tg.start_soon(self._session.stop)

    async def _interrupt(self, sig: int) -> None:
        # The child has its own terminal, so it gets the signal as from its keyboard; it decides
        # how to end (Claude closes its session on SIGINT), but end it must.
        self._session.send_signal(sig, foreground_group=True)
        if not await self._session.wait_exit(_INTERRUPT_GRACE):
            await self._session.stop()


async def _call(func: Callable[[PtySession], Awaitable[None]], session: PtySession) -> None:
    await func(session)


class _Tee:
    """Output observers: the terminal's mode tracker, then the caller's callback.

    A failing caller callback is dropped on its own, so the tracker keeps working and the
    terminal can still be restored properly."""

    def __init__(self, tracker: Callable[[bytes], None], callback: Callable[[bytes], None]) -> None:
        self._tracker = tracker
        self._callback: Callable[[bytes], None] | None = callback

    def __call__(self, chunk: bytes) -> None:
        self._tracker(chunk)
        if self._callback is not None:
            try:
                self._callback(chunk)
            except Exception:
                _log.exception("on_output callback failed; it will not be called again")
                self._callback = None


def _single_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        if len(leaf.exceptions) != 1:
            return None
        leaf = leaf.exceptions[0]
    return leaf


def main(argv: list[str]) -> int:
    """Run `[--] CMD ARGS...` through the PTY layer and return its shell-style exit code."""
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print(_USAGE, file=sys.stderr)
        return 2
    run = functools.partial(run_passthrough, command, env=os.environ.copy(), cwd=pathlib.Path.cwd())
    try:
        return anyio.run(run).code
    except (FileNotFoundError, PermissionError) as exc:  # the command, or the directory to run it in
        print(f"happy: {exc.filename or command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126  # as a shell says it


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
