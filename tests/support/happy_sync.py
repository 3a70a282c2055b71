"""What the bridge's e2e tests share: an account logged in for `happy claude` (access.key, dataKey
credentials) and for happy-agent (agent.key, the same account), the store's envelopes and the
server's history of each linked session (decrypted with the key the store keeps), and a bounded
wait on a real condition."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import anyio
import orjson

from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.link.api import HttpHappyApi
from happy_launcher.store.sessions import SessionStore

_T = TypeVar("_T")


def stored(store: SessionStore) -> dict[str, list[Any]]:
    """Each session's envelopes, as the store holds them, in seq order."""
    return {
        s.id: [orjson.loads(body) for _, body in store.raw_envelopes(s.id)] for s in store.list_sessions()
    }


async def on_server(store: SessionStore, url: str, api: HttpHappyApi) -> dict[str, list[Any]]:
    """Each linked session's messages on the server that a launcher posted (not the app's),
    decrypted: each localId checked equal to its envelope's id."""
    found: dict[str, list[Any]] = {}
    links = [store.happy_link(s.id, url) for s in store.list_sessions()]
    for link in links:
        if link is None or not link.happy_id:
            continue
        cipher = SessionCipher("dataKey", link.key)
        rows, more, after = [], True, 0
        while more:
            page, more = await api.fetch_messages(link.happy_id, after)
            rows += page
            after = page[-1].seq if page else after
        opened = [(row.localId, cipher.open(row.content)) for row in rows]
        ours = [(local_id, o) for local_id, o in opened if o.get("role") == "session"]  # not the app's
        assert [local_id for local_id, _ in ours] == [o["content"]["id"] for _, o in ours]
        found[link.session] = [o["content"] for _, o in ours]
    return found


def server_and_store(home: Path, url: str, token: str) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The server's history of each linked session and the store's envelopes, read now."""

    async def read() -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        api = HttpHappyApi(url, token)
        try:
            with SessionStore.open(home) as store:
                return await on_server(store, url, api), stored(store)
        finally:
            await api.aclose()

    return anyio.run(read)
