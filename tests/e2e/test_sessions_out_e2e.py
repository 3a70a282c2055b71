"""Sessions out against the real Happy server: sessions made by the real Claude (`happy claude -p`,
against the fake API) go out through `sessions_out`, run in-process; Happy's own client reads the
prompt and the reply, and the server's messages, decrypted, are the store's envelopes: the same
ids (localId), the same order, none twice, also after the server is stopped mid-stream and
restarted on the same data."""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import b64, content_keypair
from happy_launcher.bridge.link.api import MAX_FETCH, Fetched, HttpHappyApi, Posted, RemoteSession
from happy_launcher.bridge.link.retry import Backoff
from happy_launcher.bridge.out.sessions_out import sessions_out
from happy_launcher.store.sessions import SessionStore
from tests.support import happy_server as peer
from tests.support.claude_env import ClaudeEnv
from tests.support.happy_app import HappyApp
from tests.support.happy_sync import on_server, stored
from tests.support.happy_tui import happy_executable

pytestmark = pytest.mark.timeout(240)
BOUND = 90.0  # seconds any phase may take


class Watched:
    """The real client, with an event set at each acknowledged post (the test waits on it)."""

    def __init__(self, api: HttpHappyApi) -> None:
        self.api = api
        self.posted = anyio.Event()

    async def create_session(
        self, tag: str, metadata: str, agent_state: str | None, data_key: str | None
    ) -> RemoteSession:
        return await self.api.create_session(tag, metadata, agent_state, data_key)

    async def post_messages(self, happy_id: str, messages: Sequence[tuple[str, str]]) -> list[Posted]:
        answer = await self.api.post_messages(happy_id, messages)
        self.posted.set()
        self.posted = anyio.Event()
        return answer

    async def fetch_messages(
        self, happy_id: str, after_seq: int, limit: int = MAX_FETCH
    ) -> tuple[list[Fetched], bool]:
        return await self.api.fetch_messages(happy_id, after_seq, limit)

    async def create_machine(self, machine_id: str, metadata: str, data_key: str | None) -> None:
        await self.api.create_machine(machine_id, metadata, data_key)


def claude_p(cenv: ClaudeEnv, home: Path, prompt: str) -> None:
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    done = subprocess.run(
        [happy_executable(), "claude", "-p", prompt],
        env=env,
        cwd=cenv.cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_sessions_go_out_and_catch_up_after_the_server_restarts(
    happy_peer: Path, cenv: ClaudeEnv, home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "server-data"
    server = peer.start(happy_peer, data)
    try:
        app = HappyApp(server.url)
        credentials = Credentials(
            token=app.token,
            variant="dataKey",
            content_public=content_keypair(app.secret).public,
            machine_key=secrets.token_bytes(32),
        )
        claude_p(cenv, home, "first prompt")
        server = anyio.run(run_bridge, happy_peer, server, cenv, home, credentials)
        agent_home = tmp_path / "agent"
        agent_home.mkdir()
        (agent_home / "agent.key").write_text(json.dumps({"token": app.token, "secret": b64(app.secret)}))
        with SessionStore.open(home) as store:
            happy_ids = [store.happy_link(s.id, server.url).happy_id for s in store.list_sessions()]  # type: ignore[union-attr]
        history = "".join(
            peer.agent(happy_peer, server, agent_home, "history", h, "--json") for h in happy_ids
        )
        for text in ("first prompt", "Echo: first prompt", "second prompt", "Echo: second prompt"):
            assert text in history
    finally:
        peer.discard(server)


async def run_bridge(
    happy_peer: Path, server: peer.HappyServer, cenv: ClaudeEnv, home: Path, credentials: Credentials
) -> peer.HappyServer:
    port = int(server.url.rsplit(":", 1)[1])
    reader = HttpHappyApi(server.url, credentials.token)
    api = Watched(HttpHappyApi(server.url, credentials.token))
    store = SessionStore.open(home)  # the test's one connection to it

    async def until(done: Callable[[dict[str, list[Any]]], bool]) -> dict[str, list[Any]]:
        while True:
            posted = api.posted
            held = await on_server(store, server.url, reader)
            if done(held):
                return held
            await posted.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: sessions_out(
                home,
                server.url,
                credentials,
                "machine-e2e",
                api,
                backoff=Backoff(first=0.1, cap=0.5),
                poll=0.1,
            )
        )
        with anyio.fail_after(BOUND):
            first = await until(lambda held: len(held) == 1 and held == stored(store))
        assert len(next(iter(first.values()))) >= 4  # prompt, turn start, reply, turn end
        # The server goes away; a second session runs meanwhile (mid-stream for the bridge, which
        # follows it live), then the server comes back on the same data and port.
        await anyio.to_thread.run_sync(peer.stop, server)
        await anyio.to_thread.run_sync(claude_p, cenv, home, "second prompt")
        server = await anyio.to_thread.run_sync(peer.start, happy_peer, server.data, port)
        with anyio.fail_after(BOUND):
            await until(lambda held: len(held) == 2 and held == stored(store))
        tg.cancel_scope.cancel()
    store.close()
    await reader.aclose()
    await api.api.aclose()
    return server
