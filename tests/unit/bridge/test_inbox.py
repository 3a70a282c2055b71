"""Messages in (bridge/app/inbox.py): the app's messages reach the session in order, once, through
the control socket (the fake controller's real one); what we posted ourselves is never fed back;
a session that does not run keeps its mark and gets the rest later."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.bridge.app.inbox import AppText, Inbox, control_send
from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.link.fake_api import FakeHappyApi
from happy_launcher.bridge.out.links import Linked
from happy_launcher.control.fake import FakeController
from happy_launcher.errors import SessionEndedError
from tests.support.control import facts, running

pytestmark = pytest.mark.anyio
CIPHER = SessionCipher("dataKey", secrets.token_bytes(32))


def from_app(text: str, **meta: Any) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}, "meta": {"sentFrom": "app", **meta}}


OURS = {"role": "session", "content": {"id": "e1", "ev": {"t": "text", "text": "mirrored"}}}


async def server(*bodies: Any) -> tuple[FakeHappyApi, Linked]:
    """The server's history of one session: what we posted (localIds) and the app's messages."""
    api = FakeHappyApi()
    remote = await api.create_session("hs-alpha", "meta", None, None)
    for n, body in enumerate(bodies):
        content = body if isinstance(body, str) else CIPHER.seal(body)
        api.add_message(remote.id, content, f"e{n}" if body is OURS else None)
    return api, Linked("hs-alpha", remote.id, CIPHER)


class Sessions:
    def __init__(self, socket: Path | None) -> None:
        self.socket = socket
        self.mark = 0

    async def received_seq(self, session: str) -> int:
        return self.mark

    async def advance_received(self, session: str, seq: int) -> None:
        assert seq > self.mark
        self.mark = seq

    def control_socket(self, session: str) -> Path | None:
        return self.socket


async def test_the_apps_messages_reach_the_session_in_order_once_and_ours_are_not_fed_back(
    tmp_path: Path,
) -> None:
    controller = FakeController(facts())
    api, linked = await server(
        from_app("one", permissionMode="yolo", model="claude-x"),
        OURS,
        "bm90IHNlYWxlZA==",
        {"role": "user", "oops": 1},
        from_app("two", permissionMode="sideways"),  # not a mode: sent without it
    )
    rows = api.by_id(linked.happy_id).rows
    async with running(controller, tmp_path) as socket:
        sessions = Sessions(socket)
        inbox = Inbox(sessions, api, control_send, page=2)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:  # two readers at once: still once each
                tg.start_soon(inbox.catch_up, linked)
                tg.start_soon(inbox.catch_up, linked)
            sessions.mark = 0  # a mark lost (crash before it was saved): the session dedupes
            await inbox.catch_up(linked)
    sent = [(mid, text) for mid, (_, text) in controller.sent.items()]
    assert sent == [(rows[0].id, "one"), (rows[4].id, "two")]
    assert sessions.mark == 5
    metas = [(controller.metas[mid].permission_mode, controller.metas[mid].model) for mid, _ in sent]
    assert metas == [("bypassPermissions", "claude-x"), (None, None)]


async def test_a_session_not_running_keeps_its_mark_and_gets_the_message_later() -> None:
    api, linked = await server(from_app("early"), OURS, from_app("waits"))
    sessions = Sessions(None)
    handed: list[str] = []
    refusals = [SessionEndedError("the session ended")]

    async def deliver(socket: Path, message_id: str, message: AppText) -> None:
        if message.text == "waits" and refusals:
            raise refusals.pop()
        handed.append(message.text)

    inbox = Inbox(sessions, api, deliver)
    await inbox.catch_up(linked)
    assert (handed, sessions.mark) == ([], 0)
    sessions.socket = Path("/run/s.sock")
    await inbox.catch_up(linked)
    assert (handed, sessions.mark) == (["early"], 2)  # its socket refused the second: it waits
    await inbox.catch_up(linked)
    assert (handed, sessions.mark) == (["early", "waits"], 3)


async def test_a_pushed_message_asks_for_a_read_only_when_it_is_a_users() -> None:
    api, linked = await server()
    inbox = Inbox(Sessions(None), api, control_send)
    assert inbox.pushed(linked, "m1", CIPHER.seal(from_app("hi")))
    assert not inbox.pushed(linked, "m2", CIPHER.seal(OURS))
    assert not inbox.pushed(linked, "m3", "garbage")
