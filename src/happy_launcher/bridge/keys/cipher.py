"""One Happy session's encryption: the variant and key its payloads (metadata, agentState,
messages, RPC parameters and results) are sealed with, as base64 text for the wire."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Literal

from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import (
    KEY_BYTES,
    b64,
    decrypt_data_key,
    decrypt_legacy,
    encrypt_data_key,
    encrypt_legacy,
    unb64,
    wrap_data_key,
)
from happy_launcher.errors import DecryptError

Variant = Literal["legacy", "dataKey"]


@dataclass(frozen=True)
class SessionCipher:
    """`dataKey`: the session's own AES-256 key; `legacy`: the account secret."""

    variant: Variant
    key: bytes

    def __repr__(self) -> str:  # never a key in a log or a traceback
        return f"SessionCipher(variant={self.variant!r})"

    def seal(self, value: Any) -> str:
        """`value` as JSON, encrypted, base64: what the server stores and relays."""
        if self.variant == "dataKey":
            return b64(encrypt_data_key(value, self.key))
        return b64(encrypt_legacy(value, self.key))

    def open(self, text: str) -> Any:
        """What `seal` made (here or in Happy's app); DecryptError if it is not that."""
        try:
            data = unb64(text)
        except ValueError:
            raise DecryptError("an encrypted payload is not base64") from None
        if self.variant == "dataKey":
            return decrypt_data_key(data, self.key)
        return decrypt_legacy(data, self.key)


def new_session_cipher(credentials: Credentials) -> tuple[SessionCipher, str | None]:
    """The cipher of a session made now, and its `dataEncryptionKey` for the server (None for a
    legacy account, whose sessions use the account secret). A dataKey session's key is random
    and cannot be unwrapped here (only the app holds the content secret): keep it."""
    if credentials.variant == "legacy":
        return SessionCipher("legacy", credentials.secret), None
    key = secrets.token_bytes(KEY_BYTES)
    return SessionCipher("dataKey", key), b64(wrap_data_key(key, credentials.content_public))
