"""Each session's Happy session: made by get-or-create with tag = our session id, its key kept in
the store (store/happy_links.py) before the server ever sees it, so a restart, a crash between the
two, or `--resume` continues the same Happy session with the same key. `Links` tells the socket
side of the bridge which sessions are linked, as they are."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from happy_launcher.bridge.keys.cipher import SessionCipher, new_session_cipher
from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import b64, content_keypair, unb64, unwrap_data_key, wrap_data_key
from happy_launcher.bridge.link.api import HappyApi, RemoteSession
from happy_launcher.bridge.link.retry import LOG, Retry
from happy_launcher.control.views import SessionView
from happy_launcher.errors import DecryptError
from happy_launcher.store.happy_links import PENDING, HappyLink
from happy_launcher.store.sessions import SessionStore


@dataclass(frozen=True, slots=True)
class Linked:
    """A session and its Happy session: what the socket side needs to serve it."""

    session: str
    happy_id: str
    cipher: SessionCipher


@dataclass
class Links:
    """The sessions linked so far; `on_link` is told (in the event loop) each time sessions out
    takes a session up (a run of it, or an ended one's envelopes), with the session as found."""

    on_link: Callable[[Linked, SessionView], None] | None = None
    _by_session: dict[str, Linked] = field(default_factory=dict)
    _pause: anyio.CancelScope | None = None
    _asked: bool = False

    def look_now(self) -> None:
        """A session has just been started (a spawn): sessions out looks for it now, not at its
        next poll."""
        self._asked = True
        if self._pause is not None:
            self._pause.cancel()

    async def pause(self, sleep: Callable[[], Awaitable[None]]) -> None:
        """Sessions out's pause between two looks, cut short by `look_now`."""
        if not self._asked:
            with anyio.CancelScope() as self._pause:
                await sleep()
            self._pause = None
        self._asked = False

    def get(self, session: str) -> Linked | None:
        return self._by_session.get(session)

    def all(self) -> list[Linked]:
        return list(self._by_session.values())

    def add(self, linked: Linked, view: SessionView) -> None:
        self._by_session[linked.session] = linked
        if self.on_link is not None:
            self.on_link(linked, view)


@dataclass(frozen=True, slots=True)
class LinkMaker:
    store: SessionStore
    server: str
    credentials: Credentials
    api: HappyApi
    retry: Retry

    async def ensure(self, session: str, metadata: dict[str, Any]) -> tuple[Linked, int] | None:
        """The session's link and its sent mark; None when the server holds a session of this
        tag that this account cannot read (its key was lost with the store): then nothing is
        posted to it, since the app could not open it either."""
        link = await anyio.to_thread.run_sync(self.store.happy_link, session, self.server)
        if link is not None and link.happy_id != PENDING:
            return Linked(session, link.happy_id, self.cipher_of(link)), link.sent_seq
        if link is None:
            cipher, _ = new_session_cipher(self.credentials)
            link = HappyLink(session, self.server, PENDING, cipher.variant, _stored_key(cipher))
            await anyio.to_thread.run_sync(self.store.save_happy_link, link)  # the key first
        ours = self.cipher_of(link)
        wrapped = None
        if ours.variant == "dataKey":
            wrapped = b64(wrap_data_key(ours.key, self.credentials.content_public))
        sealed = ours.seal(metadata)
        remote = await self.retry.call(lambda: self.api.create_session(session, sealed, None, wrapped))
        held = self._server_cipher(remote, ours)
        if held is None:
            LOG.warning(
                "session %s: Happy's server already has it under a key this machine no longer holds "
                "(the store was lost); it is not sent again",
                session,
            )
            return None
        link = HappyLink(session, self.server, remote.id, held.variant, _stored_key(held))
        await anyio.to_thread.run_sync(self.store.save_happy_link, link)
        return Linked(session, remote.id, held), link.sent_seq

    def cipher_of(self, link: HappyLink) -> SessionCipher:
        if link.variant == "legacy":
            return SessionCipher("legacy", self.credentials.secret)
        return SessionCipher("dataKey", link.key)

    def _server_cipher(self, remote: RemoteSession, ours: SessionCipher) -> SessionCipher | None:
        """The cipher of the session as the server holds it (get-or-create returns an existing
        session unchanged); None if this account cannot open it."""
        if self.credentials.variant == "legacy":
            if remote.dataEncryptionKey is None:
                return ours
            content = content_keypair(self.credentials.secret).secret  # a legacy account can unwrap
            try:
                return SessionCipher("dataKey", unwrap_data_key(unb64(remote.dataEncryptionKey), content))
            except (DecryptError, ValueError):
                return None
        if remote.dataEncryptionKey is None:
            return None  # a legacy session: sealed with a secret a dataKey login never holds
        try:
            ours.open(remote.metadata)  # made with our key (now, or before a crash): ours
        except DecryptError:
            return None
        return ours


def _stored_key(cipher: SessionCipher) -> bytes:
    # A legacy session's key is the account secret: it stays in access.key alone.
    return cipher.key if cipher.variant == "dataKey" else b""
