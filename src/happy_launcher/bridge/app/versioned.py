"""A session's versioned values on Happy's server, `agentState` and `metadata`: sent sealed by
compare-and-set (`update-state`, `update-metadata` with the version we believe the server holds).
On a version mismatch (another writer, or a version this bridge did not know: a restart) the
server's version is taken and the value sent again: the bridge is the one writer of both. This
machine's metadata goes the same way (`machine-update-metadata`, by the machine's id)."""

from __future__ import annotations

import logging
from typing import Any, Literal

from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.link.updates import Updates
from happy_launcher.errors import HappyServerError

_log = logging.getLogger(__name__)
Kind = Literal["agentState", "metadata", "machine"]  # machine: this machine's metadata, by its id
_EVENT: dict[Kind, str] = {
    "agentState": "update-state",
    "metadata": "update-metadata",
    "machine": "machine-update-metadata",
}


class Versioned:
    def __init__(
        self, updates: Updates, kind: Kind, happy_id: str, cipher: SessionCipher, version: int = 0
    ) -> None:
        self._updates = updates
        self._kind = kind
        self._happy_id = happy_id
        self._cipher = cipher
        self.version = version

    async def publish(self, value: Any) -> bool:
        """True once the server holds `value`; False if it could not be sent now (the caller
        sends it again once the socket is back)."""
        sealed = self._cipher.seal(value)
        for _ in range(2):
            body = {"sid": self._happy_id, self._kind: sealed, "expectedVersion": self.version}
            if self._kind == "machine":
                body = {"machineId": self._happy_id, "metadata": sealed, "expectedVersion": self.version}
            try:
                answer = await self._updates.call(_EVENT[self._kind], body)
            except HappyServerError as exc:
                _log.info("%s of %s not sent now: %s", self._kind, self._happy_id, exc)
                return False
            version = answer.get("version") if isinstance(answer, dict) else None
            if isinstance(version, int):
                self.version = version
            if isinstance(answer, dict) and answer.get("result") == "success":
                return True
        _log.warning("%s of %s: the server kept refusing its version", self._kind, self._happy_id)
        return False
