"""Remote mode in the session: connecting the run's session to Claude through the Agent SDK
(`connect`, shared by `happy claude --happy-remote` and the Python API), and the remote launcher.

The launcher takes prompts from the terminal's remote screen (a TTY) or, without a terminal, one
per line of stdin, and prints the agent's text as it is committed."""

from __future__ import annotations

import contextlib
import os
import sys
import termios
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from claude_agent_sdk import ClaudeSDKClient

from happy_launcher.claude.args import is_uuid
from happy_launcher.claude.cli_flags import split_flags
from happy_launcher.claude.paths import project_dir, transcript_path
from happy_launcher.claude.sdk_items import Partial
from happy_launcher.errors import UsageError
from happy_launcher.home.live_claudes import ensure_not_busy, registry_dir
from happy_launcher.protocol import Cuid2Ids, Envelope
from happy_launcher.remote.driver import RemoteDriver
from happy_launcher.remote.front import RemoteFront
from happy_launcher.remote.options import PassThrough, remote_options
from happy_launcher.remote.remote_session import RemoteSession
from happy_launcher.remote.sdk_client import SdkClientFactory
from happy_launcher.remote.sdk_permissions import can_use_tool
from happy_launcher.session.config import RunConfig
from happy_launcher.session.core import Session
from happy_launcher.session.launcher import ClaudeStart, LauncherExit, Run
from happy_launcher.session.permissions import DEFAULT_TIMEOUT, PermissionBroker
from happy_launcher.terminal.plain_text import visible

if TYPE_CHECKING:
    from happy_launcher.remote.screen_link import ScreenLink
    from happy_launcher.terminal.guard import SignalReceiver


@asynccontextmanager
async def connect(
    session: Session,
    args: PassThrough,
    *,
    binary: Path,
    cwd: Path,
    env: Mapping[str, str],
    claude_session_id: str,
    resume: bool,
    permission_timeout: float | None = DEFAULT_TIMEOUT,
    broker: PermissionBroker | None = None,
    on_partial: Callable[[Partial], None] | None = None,
    on_notice: Callable[[str], None] | None = None,
    client: SdkClientFactory = ClaudeSDKClient,
) -> AsyncIterator[RemoteSession]:
    """Run Claude session `claude_session_id` (resumed, or created with that id) through the SDK
    for the block's duration, mirrored into `session`. On the way out a running turn is
    interrupted (never a bare disconnect) and pending permission requests are denied.
    `broker`: the run's, when it has one (else one for this block, with `permission_timeout`).
    `client`: builds the SDK client (`RemoteDriver`)."""
    if resume:
        ensure_not_busy(registry_dir(env), claude_session_id)
    built = remote_options(args, binary=binary, cwd=cwd, env=env, session_id=claude_session_id, resume=resume)
    if on_notice is not None and (notice := built.notice()) is not None:
        on_notice(notice)
    if broker is None:
        broker = PermissionBroker(Cuid2Ids(), timeout=permission_timeout)
    # A message may set another permission mode later (`MessageMeta`): Claude asks through us
    # after a bypass too, and lets a message set bypassPermissions (Happy's yolo) at all.
    built.options.can_use_tool = can_use_tool(broker)
    built.options.extra_args.setdefault("allow-dangerously-skip-permissions", None)

    def transcript(claude_id: str) -> Path:
        return transcript_path(env, cwd, claude_id)

    session.set_claude_session(
        claude_session_id, "resume" if resume else "startup", transcript(claude_session_id)
    )
    driver = RemoteDriver(
        session,
        built.options,
        transcript=transcript,
        claude_session_id=claude_session_id,
        on_partial=on_partial,
        client=client,
    )
    async with anyio.create_task_group() as tg:
        await tg.start(driver.run)
        try:
            yield RemoteSession(session, driver, broker)
        finally:
            broker.deny_all("the session was closed")
            driver.close()


class RemoteLauncher:
    """Runs Claude through the SDK until the user is done (end of input, or the screen exits)
    or asks for local mode. `resume`: taking over Claude session `resume` from the TUI (a
    switch): resumed as is, without the run's opening prompt."""

    def __init__(self, cfg: RunConfig, *, resume: str | None = None) -> None:
        self._cfg = cfg
        self._resume = resume
        self._screen: ScreenLink | None = None
        self._start: tuple[str, bool] | None = None

    @property
    def claude_start(self) -> ClaudeStart | None:
        return None  # the session is bound as remote mode connects (`connect`)

    def start(self) -> None:
        """Refuse, before anything starts, the session remote mode cannot run: a fork, a resume by
        title, nothing to continue (UsageError). (Its flags: `check_remote_flags`.)"""
        if self._resume is None:
            self._start = _claude_session(self._cfg)

    def close(self) -> None:
        pass  # nothing runs before `run`

    async def run(self, session: Run | None) -> LauncherExit:
        cfg = self._cfg
        if session is None:
            raise UsageError("remote mode needs happy's home: set HAPPY_HOME_DIR to a writable directory")
        if self._resume is not None:  # a switch; before the first prompt there is nothing to resume
            claude_id, resume = self._resume, transcript_path(cfg.env, cfg.cwd, self._resume).exists()
            prompt = None
        else:
            claude_id, resume = self._start or _claude_session(cfg)
            prompt = " ".join(cfg.args.prompt) or None
        async with connect(
            session.get(),
            cfg.args,
            binary=cfg.binary,
            cwd=cfg.cwd,
            env=cfg.env,
            claude_session_id=claude_id,
            resume=resume,
            broker=session.permissions,
            on_partial=self._partial,
            on_notice=_say,
        ) as remote:
            front = RemoteFront(remote, can_switch=_is_tty(cfg))
            session.front = front
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_deliver_inbound, remote, front)
                    exit = await self._front_end(remote, front, prompt, session.receive_signals)
                    tg.cancel_scope.cancel()
            finally:
                session.front = None
        if exit.reason == "switch":
            _drain_input(cfg.stdin_fd)
        return exit

    async def _front_end(
        self, remote: RemoteSession, front: RemoteFront, prompt: str | None, signals: SignalReceiver
    ) -> LauncherExit:
        cfg = self._cfg
        if not _is_tty(cfg):
            failed = await _line_mode(remote, prompt, cfg.stdin_fd)
            return LauncherExit("exited", code=1 if failed else 0)
        from happy_launcher.remote.screen_link import ScreenLink  # rich: only for a screen

        self._screen = ScreenLink(
            remote, model=_model(cfg), stdin_fd=cfg.stdin_fd, stdout_fd=cfg.stdout_fd, signals=signals
        )
        end = await self._screen.run(prompt, close=front.close_screen)
        if end.reason == "signal" and end.signal is not None:
            return LauncherExit("aborted", code=128 + end.signal)
        if end.reason == "hangup":
            return LauncherExit("aborted", code=129)
        if end.reason == "switch" or (end.reason == "closed" and front.switch_requested):
            return LauncherExit("switch")
        return LauncherExit("exited")

    def _partial(self, partial: Partial) -> None:
        if self._screen is not None:
            self._screen.partial(partial)


async def _deliver_inbound(remote: RemoteSession, front: RemoteFront) -> None:
    """Messages other clients sent, in order, each once (those stored before this start too)."""
    while True:
        await remote.deliver_pending()
        await front.inbox.wait()
        front.inbox = anyio.Event()


def _drain_input(fd: int) -> None:
    """What was typed at the remote screen after it closed must not reach the TUI."""
    with contextlib.suppress(OSError, termios.error):
        termios.tcflush(fd, termios.TCIFLUSH)


def _model(cfg: RunConfig) -> str | None:
    flags = split_flags(cfg.args.passthrough, cfg.args.prompt_positions)
    return next((f.values[0] for f in flags if f.name == "--model" and f.values), None)


def _say(line: str) -> None:
    sys.stderr.write(f"happy: {line}\n")


def _claude_session(cfg: RunConfig) -> tuple[str, bool]:
    """(Claude session id, resumed?) of a remote start, from the user's session flags."""
    intent = cfg.args.intent
    if intent.fork:
        raise UsageError("remote mode cannot fork a session yet: run `happy claude --fork-session …` locally")
    if intent.kind == "fresh":
        return intent.session_id or str(uuid.uuid4()), False
    if intent.kind == "continue":
        latest = _latest_transcript(project_dir(cfg.env, cfg.cwd))
        if latest is None:
            raise UsageError(f"no conversation to continue in {cfg.cwd}")
        return latest.stem, True
    if intent.resume_id is None or not is_uuid(intent.resume_id):
        raise UsageError(
            "remote mode resumes a session by its id: `happy claude --happy-remote --resume <uuid>`"
        )
    return intent.resume_id, True


def _latest_transcript(project: Path) -> Path | None:
    """The project's most recently written conversation (what `claude --continue` picks)."""
    try:
        mains = [(p.stat().st_mtime, p) for p in project.glob("*.jsonl")]
    except OSError:
        return None
    return max(mains)[1] if mains else None


def _is_tty(cfg: RunConfig) -> bool:
    return os.isatty(cfg.stdin_fd) and os.isatty(cfg.stdout_fd) and not cfg.args.headless


async def _line_mode(remote: RemoteSession, prompt: str | None, stdin_fd: int) -> bool:
    """Send the opening prompt, then each line of stdin; print agent text. True if a turn failed."""
    failed = False

    async def one(text: str) -> None:
        nonlocal failed
        async for envelope in remote.send(text):
            failed |= _print(envelope)

    if prompt is not None:
        await one(prompt)
    async for line in _lines(stdin_fd):
        if line.strip():
            await one(line)
    return failed


async def _lines(fd: int) -> AsyncIterator[str]:
    """`fd`'s lines until its end. Each read is abandoned when cancelled: a thread blocked reading
    stdin (the spawner's pipe never ends) must not keep a run that SIGTERM ended from ending, and
    holds no lock that anything else waits for (a file object's would)."""
    pending = b""
    while chunk := await anyio.to_thread.run_sync(os.read, fd, 1 << 16, abandon_on_cancel=True):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            yield line.decode(errors="replace")
    if pending:
        yield pending.decode(errors="replace")


def _print(envelope: Envelope) -> bool:
    """Agent text (not thinking, not subagents') to stdout, service notes to stderr."""
    ev = envelope.ev
    if ev.t == "text" and envelope.role == "agent" and envelope.subagent is None and not ev.thinking:
        sys.stdout.write(ev.text + "\n")
        sys.stdout.flush()
    elif ev.t == "service":  # a note can quote the model or a tool: its escapes are shown, not obeyed
        sys.stderr.write(f"happy: {visible(ev.text)}\n")
    return ev.t == "turn-end" and ev.status == "failed"
