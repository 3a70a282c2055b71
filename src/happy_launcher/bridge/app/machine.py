"""This machine on Happy's server: registered (get-or-create by its machine id) with metadata the
app lists it by, and kept alive (`machine-alive` every `MACHINE_ALIVE` seconds) while the bridge
runs. Its payloads are sealed as Happy's CLI seals them: a dataKey login's machine key (wrapped
to the account's content key), a legacy login's account secret. Its RPCs (`<machine id>:<name>`,
registered on the account's socket like the sessions' ones: the server routes an RPC by account
and method name, whatever the socket's scope) start, resume and stop sessions (`spawning.py`). Its
metadata says what happy-agent checks before a resume, whether Claude is here, and where sessions
may start; it is published again (by compare-and-set) on each connection, as registering leaves an
existing machine as it was, and whenever that changes (`happy daemon start --allow-dir`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import anyio

from happy_launcher.bridge.app.versioned import Versioned
from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import b64, wrap_data_key
from happy_launcher.bridge.link.api import HappyApi
from happy_launcher.bridge.link.retry import Retry
from happy_launcher.bridge.link.updates import Updates
from happy_launcher.bridge.out.metadata import MachineFacts
from happy_launcher.errors import DecryptError
from happy_launcher.protocol import Clock
from happy_launcher.spawn.dirs import read_settings
from happy_launcher.version import __version__

MACHINE_ALIVE = 20.0  # seconds between two `machine-alive`s
MACHINE_RPCS = ("spawn-happy-session", "resume-happy-session", "stop-session")
METADATA_EVERY = 2.0  # seconds between two looks at what the metadata says (the allowed directories)


def machine_cipher(credentials: Credentials) -> tuple[SessionCipher, str | None]:
    """The machine's cipher and its `dataEncryptionKey` (None for a legacy login)."""
    if credentials.variant == "legacy":
        return SessionCipher("legacy", credentials.secret), None
    key = credentials.machine_key
    return SessionCipher("dataKey", key), b64(wrap_data_key(key, credentials.content_public))


def machine_metadata(machine: MachineFacts, claude: bool, detected_at: int) -> dict[str, Any]:
    """What the app and happy-agent read of this machine; `claude`: whether Claude is found here."""
    settings = read_settings(Path(machine.happy_home_dir), Path(machine.home_dir))
    return {
        "host": machine.host,
        "platform": machine.os,
        "happyCliVersion": __version__,
        "homeDir": machine.home_dir,
        "happyHomeDir": machine.happy_home_dir,
        "happyLibDir": "",
        "allowedDirectories": [str(path) for path in settings.allowed],
        "cliAvailability": {"claude": claude, "codex": False, "gemini": False, "detectedAt": detected_at},
        "resumeSupport": {  # what `happy-agent resume` checks before it calls `resume-happy-session`
            "rpcAvailable": True,
            "requiresSameMachine": True,
            "requiresHappyAgentAuth": False,
            "happyAgentAuthenticated": True,
            "detectedAt": detected_at,
        },
    }


async def register_machine(
    api: HappyApi, retry: Retry, credentials: Credentials, machine: MachineFacts, metadata: dict[str, Any]
) -> None:
    cipher, data_key = machine_cipher(credentials)
    sealed = cipher.seal(metadata)
    await retry.call(lambda: api.create_machine(machine.machine_id, sealed, data_key))


class MachineMetadata:
    """This machine's metadata on the server, published again when what it says changes."""

    def __init__(
        self,
        machine: MachineFacts,
        claude: Callable[[], bool],
        clock: Clock,
        *,
        every: float = METADATA_EVERY,
    ) -> None:
        self._machine = machine
        self._every = every
        self._claude = claude
        self._clock = clock
        self._sent: dict[str, Any] | None = None

    def current(self) -> dict[str, Any]:
        return machine_metadata(self._machine, self._claude(), self._clock())

    def forget(self) -> None:
        """A new connection: publish again (a restarted bridge's first connection too)."""
        self._sent = None

    async def keep(self, server: Versioned) -> None:
        """Until cancelled: the server holds what `current` says (not sent now: sent at the next look)."""
        while True:
            value = await anyio.to_thread.run_sync(self.current)
            if (self._sent is None or _changed(self._sent, value)) and await server.publish(value):
                self._sent = value
            await anyio.sleep(self._every)


def _changed(before: dict[str, Any], now: dict[str, Any]) -> bool:
    def what(value: dict[str, Any]) -> tuple[Any, ...]:  # leaving out the times of detection
        return value["allowedDirectories"], value["cliAvailability"]["claude"]

    return what(before) != what(now)


async def keep_alive(updates: Updates, machine_id: str, clock: Clock, every: float = MACHINE_ALIVE) -> None:
    while True:
        await updates.emit("machine-alive", {"machineId": machine_id, "time": clock()})
        await anyio.sleep(every)


class Sessions(Protocol):
    """What the machine's RPCs do (`spawning.MachineSessions`)."""

    async def spawn(self, params: dict[str, Any]) -> dict[str, Any]: ...

    async def resume(self, params: dict[str, Any]) -> dict[str, Any]: ...

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
        if name == "resume-happy-session":
            return self._cipher.seal(await self._sessions.resume(request))
        happy_id = request.get("sessionId")
        if name == "stop-session" and isinstance(happy_id, str) and await self._sessions.stop(happy_id):
            return self._cipher.seal({"message": "Session stopped"})
        return self._cipher.seal({"error": f"{happy_id} is not a session this machine started, or it ended"})
