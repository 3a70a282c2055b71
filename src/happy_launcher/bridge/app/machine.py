"""This machine on Happy's server: registered (get-or-create by its machine id) with metadata the
app lists it by, and kept alive (`machine-alive` every `MACHINE_ALIVE` seconds) while the bridge
runs. Its payloads are sealed as Happy's CLI seals them: a dataKey login's machine key (wrapped
to the account's content key), a legacy login's account secret. Its RPCs (`<machine id>:<name>`,
registered on the account's socket like the sessions' ones: the server routes an RPC by account
and method name, whatever the socket's scope) start and stop sessions (`spawner.py`)."""

from __future__ import annotations

from typing import Any, Protocol

import anyio

from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import b64, wrap_data_key
from happy_launcher.bridge.link.api import HappyApi
from happy_launcher.bridge.link.retry import Retry
from happy_launcher.bridge.link.updates import Updates
from happy_launcher.bridge.out.metadata import MachineFacts
from happy_launcher.errors import DecryptError
from happy_launcher.protocol import Clock
from happy_launcher.version import __version__

MACHINE_ALIVE = 20.0  # seconds between two `machine-alive`s
MACHINE_RPCS = ("spawn-happy-session", "stop-session")


def machine_cipher(credentials: Credentials) -> tuple[SessionCipher, str | None]:
    """The machine's cipher and its `dataEncryptionKey` (None for a legacy login)."""
    if credentials.variant == "legacy":
        return SessionCipher("legacy", credentials.secret), None
    key = credentials.machine_key
    return SessionCipher("dataKey", key), b64(wrap_data_key(key, credentials.content_public))


def machine_metadata(machine: MachineFacts) -> dict[str, Any]:
    return {
        "host": machine.host,
        "platform": machine.os,
        "happyCliVersion": __version__,
        "homeDir": machine.home_dir,
        "happyHomeDir": machine.happy_home_dir,
        "happyLibDir": "",
    }


async def register_machine(
    api: HappyApi, retry: Retry, credentials: Credentials, machine: MachineFacts
) -> None:
    cipher, data_key = machine_cipher(credentials)
    sealed = cipher.seal(machine_metadata(machine))
    await retry.call(lambda: api.create_machine(machine.machine_id, sealed, data_key))


async def keep_alive(updates: Updates, machine_id: str, clock: Clock, every: float = MACHINE_ALIVE) -> None:
    while True:
        await updates.emit("machine-alive", {"machineId": machine_id, "time": clock()})
        await anyio.sleep(every)


class Sessions(Protocol):
    """What the machine's RPCs do (`spawner.Spawner`)."""

    async def spawn(self, params: dict[str, Any]) -> dict[str, Any]: ...

    async def stop(self, happy_id: str) -> bool: ...


class MachineRpc:
    def __init__(self, machine_id: str, cipher: SessionCipher, sessions: Sessions) -> None:
        self._prefix = f"{machine_id}:"
        self._cipher = cipher
        self._sessions = sessions

    def methods(self) -> list[str]:
        return [self._prefix + name for name in MACHINE_RPCS]

    def serves(self, method: str) -> bool:
        return method.startswith(self._prefix)

    async def call(self, method: str, params: str) -> str:
        """The sealed answer to one of `methods()`."""
        try:
            request = self._cipher.open(params)
        except DecryptError:
            request = None
        if not isinstance(request, dict):
            return self._cipher.seal({"error": "the request is not one this machine understands"})
        name = method.removeprefix(self._prefix)
        if name == "spawn-happy-session":
            return self._cipher.seal(await self._sessions.spawn(request))
        happy_id = request.get("sessionId")
        if name == "stop-session" and isinstance(happy_id, str) and await self._sessions.stop(happy_id):
            return self._cipher.seal({"message": "Session stopped"})
        return self._cipher.seal({"error": f"{happy_id} is not a session this machine started, or it ended"})
