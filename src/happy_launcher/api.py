"""The Python API: drive a Claude session from a script, mirrored like any `happy claude` run
(same store and mirror, so `happy replay`, the store and later `happy watch` see it too).

    async with happy_launcher.open_session(cwd=".", permission_mode="acceptEdits") as s:
        async for envelope in s.send("summarise README.md"):
            print(envelope.ev)

    envelopes = happy_launcher.run("hello")  # one prompt, one turn, no event loop of your own
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from happy_launcher.claude.binary import find_claude
from happy_launcher.errors import unwrapped
from happy_launcher.home.dirs import ensure_home, happy_home
from happy_launcher.protocol import Envelope
from happy_launcher.remote.launcher import connect
from happy_launcher.remote.options import check_remote_flags
from happy_launcher.remote.remote_session import RemoteSession
from happy_launcher.session.core import Session
from happy_launcher.session.permissions import DEFAULT_TIMEOUT
from happy_launcher.session.ports import PermissionAnswer

__all__ = ["PermissionAnswer", "RemoteSession", "open_session", "run"]


@dataclass(frozen=True)
class _Flags:
    """The API's keyword arguments as the claude flags remote mode reads (`remote/options.py`)."""

    passthrough: tuple[str, ...]
    prompt_positions: tuple[int, ...] = ()
    user_settings: str | None = None


@asynccontextmanager
async def open_session(
    cwd: str | Path | None = None,
    *,
    resume: str | None = None,
    permission_mode: str | None = None,
    model: str | None = None,
    claude_args: Sequence[str] = (),
    permission_timeout: float | None = DEFAULT_TIMEOUT,
    env: Mapping[str, str] | None = None,
    home: str | Path | None = None,
) -> AsyncIterator[RemoteSession]:
    """Open a Claude session driven through the Agent SDK: a new one, or `resume` (a Claude
    session id, from local mode or an earlier script: its happy session goes on).

    `claude_args`: more `claude` flags (see the README's table of what remote mode carries).
    `permission_timeout`: seconds a permission request waits for `answer` before it is denied
    (None: forever). `env` (default `os.environ`) is Claude's environment and names happy's home
    (`HAPPY_HOME_DIR`) unless `home` is given. Errors are `happy_launcher.errors.HappyError`s: a
    refused flag or a bad value (`UsageError`) before anything starts, a flag Claude rejects
    (`ClaudeRefusedError`)."""
    environ = dict(os.environ if env is None else env)
    workdir = _workdir(cwd)
    flags = list(claude_args)
    if permission_mode is not None:
        flags += ["--permission-mode", permission_mode]
    if model is not None:
        flags += ["--model", model]
    check_remote_flags(_Flags(tuple(flags)))  # before anything starts
    claude_id = resume if resume is not None else str(uuid.uuid4())
    state_dir = ensure_home(Path(home) if home is not None else happy_home(environ))
    # The caller gets happy's own error (HappyError), never the task groups' ExceptionGroup.
    with unwrapped(), Session(state_dir, workdir) as session:
        async with connect(
            session,
            _Flags(tuple(flags)),
            binary=find_claude(environ),
            cwd=workdir,
            env=environ,
            claude_session_id=claude_id,
            resume=resume is not None,
            permission_timeout=permission_timeout,
        ) as remote:
            yield remote


def _workdir(cwd: str | Path | None) -> Path:
    """Claude's working directory, resolved as Claude resolves it (its transcripts' folder)."""
    return Path.cwd() if cwd is None else Path(cwd).resolve()


def run(prompt: str, **options: Any) -> list[Envelope]:
    """Send one prompt in a new session (or `resume=…`) and return the envelopes of its turn.
    Takes the keyword arguments of `open_session`."""

    async def one_turn() -> list[Envelope]:
        async with open_session(**options) as session:
            return [envelope async for envelope in session.send(prompt)]

    return anyio.run(one_turn)
