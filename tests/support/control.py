"""A control server over a FakeController, for the control socket's and the CLI verbs' tests."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from happy_launcher.control.fake import FakeController
from happy_launcher.control.server import serve
from happy_launcher.home.procs import ProcessId
from happy_launcher.protocol import Envelope, EnvelopeFactory, SequentialIds, TextEv
from happy_launcher.session.ports import SessionFacts
from happy_launcher.store.sessions import SessionStore


def facts(**changes: Any) -> SessionFacts:
    values: dict[str, Any] = {
        "happy_session_id": "hs-alpha",
        "claude_session_id": "c0ffee00-0000-4000-8000-000000000001",
        "mode": "local",
        "cwd": "/work/project",
        "pid": os.getpid(),
        "started_at": 1_700_000_000_000,
        "busy": False,
    }
    return SessionFacts(**{**values, **changes})


class Envelopes:
    """Distinct user-text envelopes: `make(3)` -> three new ones."""

    def __init__(self) -> None:
        self._factory = EnvelopeFactory(SequentialIds("env"))
        self._n = 0

    def make(self, count: int, size: int = 0) -> list[Envelope]:
        made = []
        for _ in range(count):
            self._n += 1
            text = f"message {self._n} " + "x" * size
            made.append(self._factory.user_text(text, 1_700_000_000_000 + self._n))
        return made


@asynccontextmanager
async def running(controller: FakeController, home: Path, **options: Any) -> AsyncIterator[Path]:
    """The server, serving `controller` under `home`, until the block ends; yields the socket."""
    async with anyio.create_task_group() as tg:
        path: Path = await tg.start(partial(serve, controller, home, **options))
        yield path
        tg.cancel_scope.cancel()


class FakeSocket:
    """A client's socket as an `Outbox` sends to it: takes at most `room` bytes at once (None:
    all); `send` waits until `release` is set."""

    def __init__(self, room: int | None = None) -> None:
        self.room = room
        self.now: list[bytes] = []  # taken by send_now
        self.later: list[bytes] = []  # taken by the writer's send
        self.release = anyio.Event()
        self.sending = anyio.Event()
        self.release.set()

    def send_now(self, data: bytes) -> int:
        taken = data if self.room is None else data[: self.room]
        if taken:
            self.now.append(taken)
        return len(taken)

    async def send(self, data: bytes) -> None:
        self.sending.set()
        await self.release.wait()
        self.later.append(data)

    @property
    def received(self) -> bytes:
        return b"".join(self.now + self.later)


def wait_for_file(path: Path, timeout: float) -> None:
    """Wait (on inotify, bounded) until `path` exists, e.g. a session's control socket."""

    async def wait() -> None:
        from happy_launcher.claude.watch import make_watcher

        watcher = make_watcher()
        target = anyio.Path(path)
        try:
            with anyio.fail_after(timeout):
                while not await target.exists():
                    watcher.watch(
                        {d for d in (path.parent, path.parent.parent) if await anyio.Path(d).is_dir()}
                    )
                    if not await target.exists():
                        await watcher.wait(1.0)
        finally:
            watcher.close()

    anyio.run(wait)


def stored_session(
    home: Path,
    session_id: str,
    *,
    prompt: str | None,
    at: int,
    cwd: str = "/work/project",
    transcript: Path | None = None,
    owner: ProcessId | None = None,
) -> None:
    """A session in the store under `home` whose first user message is `prompt` (after agent
    text), last active at `at` (ms); ended unless `owner` (its launcher) is given; its Claude
    session's transcript at `transcript`."""
    make = EnvelopeFactory(SequentialIds("e" + "".join(c for c in session_id.lower() if c.isalnum())))
    store = SessionStore.open(home)
    try:
        store.create_session(session_id, cwd=cwd, started_at=at - 1000, owner=owner)
        store.record_claude_session(
            session_id,
            f"claude-{session_id}",
            source="startup",
            seen_at=at,
            transcript_path=None if transcript is None else str(transcript),
        )
        envelopes = [make.agent(TextEv(text="agent text first"), turn="t0", time=at - 2)]
        if prompt is not None:
            envelopes += [make.user_text(prompt, at - 1), make.user_text("a later prompt", at - 1)]
        store.append_envelopes(session_id, [*envelopes, make.agent(TextEv(text="done"), turn="t1", time=at)])
        if owner is None:
            store.end_session(session_id, "completed", at)
    finally:
        store.close()
