"""One Happy account on the real server, as the e2e tests of the bridge share it: the app's side
(`HappyApp`: the secret, a token), this machine logged in to it (`access.key` in HAPPY_HOME_DIR,
dataKey credentials as a V2 pairing leaves them), Happy's own client as the same account
(happy-agent's `agent.key`), and the app's live socket (`AppSocket`)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio

from happy_launcher.bridge.keys.credentials import Credentials, write_credentials
from happy_launcher.bridge.keys.crypto import b64, content_keypair
from happy_launcher.claude.watch import make_watcher
from tests.support import happy_server as peer
from tests.support.app_socket import AppSocket
from tests.support.happy_app import HappyApp
from tests.support.happy_tui import happy_executable

_T = TypeVar("_T")
RECHECK = 1.0  # seconds: a try without a change seen, should the answer change elsewhere


class HappyAccount:
    def __init__(self, happy_peer: Path, server: peer.HappyServer, root: Path) -> None:
        self.peer = happy_peer
        self.server = server
        self.app = HappyApp(server.url)
        self.agent_home = root / "agent"
        self.agent_home.mkdir(parents=True)
        key = {"token": self.app.token, "secret": b64(self.app.secret)}
        (self.agent_home / "agent.key").write_text(json.dumps(key))

    def log_in(self, home: Path) -> None:
        """This machine (HAPPY_HOME_DIR `home`) logged in to the account, as after a V2 pairing."""
        content = content_keypair(self.app.secret).public
        credentials = Credentials(
            self.app.token, "dataKey", content_public=content, machine_key=secrets.token_bytes(32)
        )
        write_credentials(home, credentials)

    def env(self, home: Path) -> dict[str, str]:
        """What `happy` needs to reach this account's server from `home`."""
        return {"HAPPY_HOME_DIR": str(home), "HAPPY_SERVER_URL": self.server.url}

    def agent(self, *args: str) -> str:
        """happy-agent as this account; its stdout."""
        return peer.agent(self.peer, self.server, self.agent_home, *args)

    def socket(self) -> AppSocket:
        """The app's live socket (close it, or use it as a context manager)."""
        return AppSocket(self.server.url, self.app.token, self.app.secret)

    def stop_daemon(self, home: Path) -> None:
        """Teardown: the bridge `happy claude` started for `home`, stopped."""
        env = {**os.environ, **self.env(home)}
        subprocess.run([happy_executable(), "daemon", "stop"], env=env, timeout=30, check=False)


def until(check: Callable[[], _T | None], bound: float, what: str, changes: Path | None = None) -> _T:
    """`check()`'s first truthy answer, tried again until `bound` seconds passed: for conditions
    with no event to wait on, each try a real call (happy-agent, the store). With `changes` (a
    directory whose files change with the answer, e.g. HAPPY_HOME_DIR for the store) a try waits
    on inotify for a change there, and tries once a second even without one, rather than spinning
    a core that the processes under test need."""
    if changes is None:
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            if answer := check():
                return answer
        raise AssertionError(f"not within {bound} s: {what}")

    async def changed() -> _T:
        return await _until_changed(check, bound, what, changes)

    return anyio.run(changed)


async def _until_changed(check: Callable[[], _T | None], bound: float, what: str, changes: Path) -> _T:
    watcher = make_watcher()
    try:
        watcher.watch({changes})  # before the first try: a change made during a try is not missed
        with anyio.move_on_after(bound):
            while not (answer := check()):
                await watcher.wait(RECHECK)
                watcher.changes()
            return answer
    finally:
        watcher.close()
    raise AssertionError(f"not within {bound} s: {what}")
