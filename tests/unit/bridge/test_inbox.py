"""Messages in (bridge/inbox.py): the app's messages reach the session in order, once, through
the control socket (the fake controller's real one); what we posted ourselves is never fed back;
a session that does not run keeps its mark and gets the rest later."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.bridge.cipher import SessionCipher
from happy_launcher.bridge.inbox import Inbox, Linked, ServerMessage, control_send
from happy_launcher.control.fake import FakeController
from happy_launcher.errors import SessionEndedError
from tests.support.control import facts, running

pytestmark = pytest.mark.anyio
CIPHER = SessionCipher("dataKey", secrets.token_bytes(32))
LINKED = Linked("hs-alpha", "srv-1", CIPHER)


def from_app(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}, "meta": {"sentFrom": "app"}}


OURS = {"role": "session", "content": {"id": "e1", "ev": {"t": "text", "text": "mirrored"}}}


class History:
    """The server's history of one session, read in pages of `page`."""

    def __init__(self, *bodies: Any, page: int = 2) -> None:
        self.messages: list[ServerMessage] = []
        self.page = page
        for body in bodies:
            self.add(body)

    def add(self, body: Any) -> None:
        seq = len(self.messages) * 2 + 1  # the server's seqs may have gaps
        content = body if isinstance(body, str) else CIPHER.seal(body)
        self.messages.append(ServerMessage(f"m{seq}", seq, content))

    async def after(self, happy_id: str, after_seq: int, limit: int) -> tuple[Sequence[ServerMessage], bool]:
        later = [m for m in self.messages if m.seq > after_seq]
        return later[: self.page], len(later) > self.page


class Sessions:
    def __init__(self, socket: Path | None) -> None:
        self.socket = socket
        self.mark = 0

    def received_seq(self, session: str) -> int:
        return self.mark

    def advance_received(self, session: str, seq: int) -> None:
        assert seq > self.mark
        self.mark = seq

    def control_socket(self, session: str) -> Path | None:
        return self.socket


async def test_the_apps_messages_reach_the_session_in_order_once_and_ours_are_not_fed_back(
    tmp_path: Path,
) -> None:
    controller = FakeController(facts())
    history = History(from_app("one"), OURS, "bm90IHNlYWxlZA==", {"role": "user", "oops": 1}, from_app("two"))
    async with running(controller, tmp_path) as socket:
        sessions = Sessions(socket)
        inbox = Inbox(sessions, history, control_send)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:  # two readers at once: still once each
                tg.start_soon(inbox.catch_up, LINKED)
                tg.start_soon(inbox.catch_up, LINKED)
            sessions.mark = 0  # a mark lost (crash before it was saved): the session dedupes
            await inbox.catch_up(LINKED)
    assert [(mid, text) for mid, (_, text) in controller.sent.items()] == [("m1", "one"), ("m9", "two")]
    assert sessions.mark == 9


async def test_a_session_not_running_keeps_its_mark_and_gets_the_message_later() -> None:
    history = History(from_app("early"), OURS, from_app("waits"))
    sessions = Sessions(None)
    handed: list[str] = []
    refusals = [SessionEndedError("the session ended")]

    async def deliver(socket: Path, message_id: str, text: str) -> None:
        if text == "waits" and refusals:
            raise refusals.pop()
        handed.append(text)

    inbox = Inbox(sessions, history, deliver)
    await inbox.catch_up(LINKED)
    assert (handed, sessions.mark) == ([], 0)
    sessions.socket = Path("/run/s.sock")
    await inbox.catch_up(LINKED)
    assert (handed, sessions.mark) == (["early"], 3)  # its socket refused the second: it waits
    await inbox.catch_up(LINKED)
    assert (handed, sessions.mark) == (["early", "waits"], 5)


async def test_a_pushed_message_asks_for_a_read_only_when_it_is_a_users() -> None:
    inbox = Inbox(Sessions(None), History(), control_send)
    assert inbox.pushed(LINKED, CIPHER.seal(from_app("hi")))
    assert not inbox.pushed(LINKED, CIPHER.seal(OURS))
    assert not inbox.pushed(LINKED, "garbage")
