"""Messages in: what the app's user sends to a session reaches it as a control `send` whose
message id is the server's, so the session stores it before it is acknowledged and delivers it
exactly once, through its own input mode (switch or inject).

The server's history is the inbox: a session's mark (`received_seq`) is the last server message
handled; a pushed message from the app (or a reconnection, or the session starting to run) makes
the bridge read the session's history after its mark, in order, one reader per session at a
time. What we posted ourselves (`role: session`) is skipped, never fed back; a message that does
not open or is not a user's text is logged and passed over; a session that is not running keeps
its mark, so the message waits for it (a resumed session gets it)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import anyio
from pydantic import BaseModel, ValidationError

from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.link.api import Fetched, HappyApi
from happy_launcher.bridge.out.links import Linked
from happy_launcher.errors import DecryptError, HappyError
from happy_launcher.session.ports import meta_problem

_log = logging.getLogger(__name__)
FETCH_LIMIT = 500  # the server's own maximum per read


class Sessions(Protocol):
    """The bridge's view of our sessions and their marks."""

    async def received_seq(self, session: str) -> int: ...

    async def advance_received(self, session: str, seq: int) -> None: ...

    def control_socket(self, session: str) -> Path | None:
        """The running session's control socket; None if it does not run now."""
        ...


@dataclass(frozen=True, slots=True)
class AppText:
    """A user's message: its text, and the permission mode and model it asks for (if any)."""

    text: str
    permission_mode: str | None = None
    model: str | None = None


class Deliver(Protocol):
    async def __call__(self, socket: Path, message_id: str, message: AppText) -> None:
        """Hand a message to the session (a control `send`; idempotent on `message_id`)."""
        ...


class _Text(BaseModel):
    type: Literal["text"]
    text: str


class _Meta(BaseModel):
    permissionMode: str | None = None  # the app's field names
    model: str | None = None


class AppMessage(BaseModel):
    """A user's message as the app and happy-agent send it (Happy's legacy user shape)."""

    role: Literal["user"]
    content: _Text
    meta: _Meta | None = None

    def app_text(self, message_id: str) -> AppText:
        mode, model = (self.meta.permissionMode, self.meta.model) if self.meta else (None, None)
        if (problem := meta_problem(mode, model)) is not None:
            _log.warning("message %s: %s; sent without its mode and model", message_id, problem)
            mode = model = None
        return AppText(self.content.text, mode, model)


def user_text(cipher: SessionCipher, message_id: str, content: str) -> AppText | None:
    """A user's message; None for anything else (ours, an agent's, damaged)."""
    try:
        body = cipher.open(content)
    except DecryptError:
        _log.warning("message %s does not open with its session's key: passed over", message_id)
        return None
    if isinstance(body, dict) and body.get("role") != "user":
        return None  # what a launcher posted (ours included): never fed back
    try:
        return AppMessage.model_validate(body).app_text(message_id)
    except ValidationError:
        _log.warning("message %s is not a user's text: passed over", message_id)
        return None


class Inbox:
    """Reads each session's history after its mark and hands the users' messages to it."""

    def __init__(self, sessions: Sessions, api: HappyApi, deliver: Deliver, page: int = FETCH_LIMIT) -> None:
        self._sessions = sessions
        self._api = api
        self._page = page
        self._deliver = deliver
        self._locks: dict[str, anyio.Lock] = {}

    def pushed(self, linked: Linked, message_id: str, content: str) -> bool:
        """A message pushed by the server: whether it is a user's (then `catch_up`)."""
        return user_text(linked.cipher, message_id, content) is not None

    async def catch_up(self, linked: Linked) -> None:
        """Handle the session's messages after its mark, in order; stops at the first user
        message the session cannot take now (not running, or its socket refused)."""
        lock = self._locks.setdefault(linked.session, anyio.Lock())
        async with lock:
            mark = await self._sessions.received_seq(linked.session)
            more = True
            while more:
                messages, more = await self._api.fetch_messages(linked.happy_id, mark, self._page)
                for message in messages:
                    if not await self._handle(linked, message):
                        return
                    mark = message.seq
                    await self._sessions.advance_received(linked.session, mark)
                more = more and bool(messages)

    async def _handle(self, linked: Linked, message: Fetched) -> bool:
        text = user_text(linked.cipher, message.id, message.content)
        if text is None:
            return True
        socket = self._sessions.control_socket(linked.session)
        if socket is None:
            return False
        try:
            await self._deliver(socket, message.id, text)
        except HappyError as exc:
            _log.info("message %s waits: session %s did not take it (%s)", message.id, linked.session, exc)
            return False
        _log.info("message %s handed to session %s", message.id, linked.session)
        return True


async def control_send(socket: Path, message_id: str, message: AppText) -> None:
    """The real `Deliver`: the session's control socket `send` verb."""
    from happy_launcher.control.client import connect

    async with connect(socket) as client:
        await client.send(
            message_id, message.text, permission_mode=message.permission_mode, model=message.model
        )
