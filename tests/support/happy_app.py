"""The test playing the Happy app where happy-agent cannot: it holds an account secret, logs in as
that account (`POST /v1/auth`, signed with the secret's ed25519 key) and approves a terminal's
pairing request (`POST /v1/auth/response`), as the app's sources describe (facts, Auth)."""

from __future__ import annotations

import base64
import secrets
from typing import Any

import httpx
from nacl.signing import SigningKey

from happy_launcher.bridge.keys.crypto import b64, content_keypair, seal_bundle


def terminal_key(link: str) -> bytes:
    """The terminal's public key from its `happy://terminal?<base64url>` link."""
    prefix = "happy://terminal?"
    assert link.startswith(prefix), link
    text = link[len(prefix) :]
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class HappyApp:
    def __init__(self, url: str, secret: bytes | None = None) -> None:
        self.secret = secret or secrets.token_bytes(32)
        self.http = httpx.Client(base_url=url, timeout=15)
        self.token = self._login()

    def _login(self) -> str:
        key = SigningKey(self.secret)
        challenge = secrets.token_bytes(32)
        body = {
            "publicKey": b64(bytes(key.verify_key)),
            "challenge": b64(challenge),
            "signature": b64(key.sign(challenge).signature),
        }
        answer = self.http.post("/v1/auth", json=body)
        answer.raise_for_status()
        return str(answer.json()["token"])

    def approve(self, link: str, *, v2: bool) -> None:
        """Answer the terminal: V2 hands over the content public key, V1 the account secret."""
        payload = b"\x00" + content_keypair(self.secret).public if v2 else self.secret
        terminal = terminal_key(link)
        body = {"publicKey": b64(terminal), "response": b64(seal_bundle(payload, terminal))}
        answer = self.http.post("/v1/auth/response", json=body, headers=self.auth(self.token))
        answer.raise_for_status()

    @staticmethod
    def auth(token: str) -> dict[str, Any]:
        return {"Authorization": f"Bearer {token}"}
