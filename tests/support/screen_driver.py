"""Runs a `RemoteScreen` on this process's terminal, for tests/unit/remote/test_screen_pty.py.

`python -m tests.support.screen_driver FEED LOG`: FEED is a FIFO the test writes JSON lines to,
each one thing for the screen: `{"envelopes": [...]}`, `{"partial": "..."}`, `{"permission":
{id, tool, title, input}}`, `{"permission_done": id}`, `{"status": {...}}`, `{"close": true}`, or
`{"raise": "message"}` (the feeding task fails: the screen must still restore the terminal).
`RecordingActions` (the fake `ScreenActions`) appends every call it gets to LOG as a JSON line,
after a first `{"pid": ...}` line; how the screen ended is the last line. A send of the text
`fail` raises, as a session that cannot deliver it would.

Exit code: 128 + the signal when a signal ended the screen, else 0.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import orjson

from happy_launcher.protocol import parse_envelope
from happy_launcher.remote.screen import RemoteScreen, StatusInfo
from happy_launcher.session.ports import PermissionRequest

STATUS = StatusInfo("hsession0001", "claude-session-1", "fake-model")


class RecordingActions:
    """The fake session: records what the screen asks for."""

    def __init__(self, log_path: str) -> None:
        self._fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def record(self, entry: dict[str, Any]) -> None:
        os.write(self._fd, orjson.dumps(entry) + b"\n")

    async def send(self, text: str) -> None:
        self.record({"call": "send", "text": text})
        if text == "fail":
            raise RuntimeError("the session is gone")

    async def interrupt(self) -> None:
        self.record({"call": "interrupt"})

    async def answer_permission(self, request_id: str, allow: bool, *, stop: bool = False) -> None:
        self.record({"call": "answer", "id": request_id, "allow": allow, "stop": stop})


async def feed(screen: RemoteScreen, path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    buffered = b""
    try:
        while True:
            await anyio.wait_readable(fd)
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            *lines, buffered = (buffered + chunk).split(b"\n")
            for line in lines:
                apply(screen, orjson.loads(line))
    finally:
        os.close(fd)


def apply(screen: RemoteScreen, item: dict[str, Any]) -> None:
    if "envelopes" in item:
        screen.on_envelopes([parse_envelope(orjson.dumps(e)) for e in item["envelopes"]])
    elif "partial" in item:
        screen.on_partial(item["partial"])
    elif "permission" in item:
        screen.on_permission(PermissionRequest(**item["permission"]))
    elif "permission_done" in item:
        screen.on_permission_done(item["permission_done"])
    elif "status" in item:
        screen.set_status(StatusInfo(**item["status"]))
    elif "close" in item:
        screen.close()
    elif "raise" in item:
        raise RuntimeError(item["raise"])


async def main(feed_path: str, log_path: str) -> int:
    actions = RecordingActions(log_path)
    actions.record({"pid": os.getpid()})
    screen = RemoteScreen(actions, status=STATUS)
    async with anyio.create_task_group() as tg:
        tg.start_soon(feed, screen, feed_path)
        end = await screen.run()
        tg.cancel_scope.cancel()
    actions.record({"end": end.reason, "signal": end.signal})
    return 0 if end.signal is None else 128 + end.signal


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[2]))
