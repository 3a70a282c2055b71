"""Happy's end-to-end encryption, sans-IO: the content keypair derived from the account secret,
box bundles, and JSON payloads under secretbox (legacy) or AES-256-GCM (dataKey).

Byte layouts are those of Happy's clients (`../shared/docs/happy-server-facts.md`, Encryption), so
the app and Happy's own CLI read what we write and we read what they write."""

from __future__ import annotations

import base64
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.exceptions import CryptoError
from nacl.public import Box, PrivateKey, PublicKey
from nacl.secret import SecretBox

from happy_launcher.errors import DecryptError

KEY_BYTES = 32
BOX_NONCE_BYTES = 24
BOX_MAC_BYTES = 16
GCM_NONCE_BYTES = 12
GCM_TAG_BYTES = 16
VERSION_0 = b"\x00"  # the first byte of an AES-GCM payload and of a wrapped dataKey


@dataclass(frozen=True)
class BoxKeys:
    public: bytes
    secret: bytes

    def __repr__(self) -> str:  # a keypair that reaches a log or a traceback shows no secret
        return f"BoxKeys(public={b64(self.public)})"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def b64url(data: bytes) -> str:
    """Unpadded URL-safe base64, as the `happy://terminal?…` link carries a public key."""
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def derive_key(master: bytes, usage: str, path: list[str]) -> bytes:
    """Happy's key tree: HMAC-SHA512 from "<usage> Master Seed", then one child per path element
    (HMAC keyed by the parent's chain code over 0x00 | name); the key is the first half."""
    state = hmac.digest(f"{usage} Master Seed".encode(), master, "sha512")
    for name in path:
        state = hmac.digest(state[32:], b"\x00" + name.encode(), "sha512")
    return state[:32]


def content_keypair(secret: bytes) -> BoxKeys:
    """The account's content keypair: libsodium's seed keypair of the "content" key, whose box
    secret key is SHA-512(seed)[:32] (PyNaCl's `from_seed` is that same construction)."""
    key = PrivateKey.from_seed(derive_key(secret, "Happy EnCoder", ["content"]))
    return BoxKeys(public=bytes(key.public_key), secret=bytes(key))


def new_box_keys() -> BoxKeys:
    key = PrivateKey.generate()
    return BoxKeys(public=bytes(key.public_key), secret=bytes(key))


def seal_bundle(plaintext: bytes, recipient_public: bytes) -> bytes:
    """`[ephemeral pk 32 | nonce 24 | box]`: readable only by the holder of the recipient's key."""
    ephemeral = PrivateKey.generate()
    nonce = secrets.token_bytes(BOX_NONCE_BYTES)
    sealed = Box(ephemeral, PublicKey(recipient_public)).encrypt(plaintext, nonce).ciphertext
    return bytes(ephemeral.public_key) + nonce + sealed


def open_bundle(bundle: bytes, recipient_secret: bytes) -> bytes:
    if len(bundle) < KEY_BYTES + BOX_NONCE_BYTES + BOX_MAC_BYTES:
        raise DecryptError("a box bundle is too short")
    sender = PublicKey(bundle[:KEY_BYTES])
    nonce, sealed = bundle[KEY_BYTES : KEY_BYTES + BOX_NONCE_BYTES], bundle[KEY_BYTES + BOX_NONCE_BYTES :]
    try:
        return Box(PrivateKey(recipient_secret), sender).decrypt(sealed, nonce)
    except CryptoError:
        raise DecryptError("a box bundle does not open with this key") from None


def wrap_data_key(data_key: bytes, content_public: bytes) -> bytes:
    """A session's dataKey as its `dataEncryptionKey`: 0x00 | a box bundle to the content key."""
    return VERSION_0 + seal_bundle(data_key, content_public)


def unwrap_data_key(wrapped: bytes, content_secret: bytes) -> bytes:
    if wrapped[:1] != VERSION_0:
        raise DecryptError("a wrapped data key has an unknown version")
    return open_bundle(wrapped[1:], content_secret)


def _json_bytes(value: Any) -> bytes:
    # As JSON.stringify writes it: no spaces, non-ASCII as UTF-8.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _json_value(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise DecryptError("a decrypted payload is not JSON") from None


def encrypt_legacy(value: Any, secret: bytes) -> bytes:
    """`[nonce 24 | secretbox]` under the account secret."""
    nonce = secrets.token_bytes(BOX_NONCE_BYTES)
    return bytes(SecretBox(secret).encrypt(_json_bytes(value), nonce))


def decrypt_legacy(data: bytes, secret: bytes) -> Any:
    try:
        return _json_value(SecretBox(secret).decrypt(data))
    except (CryptoError, ValueError):
        raise DecryptError("a legacy payload does not open with this secret") from None


def encrypt_data_key(value: Any, data_key: bytes) -> bytes:
    """`[0x00 | nonce 12 | ciphertext | tag 16]` under a session's AES-256 key."""
    nonce = secrets.token_bytes(GCM_NONCE_BYTES)
    return VERSION_0 + nonce + AESGCM(data_key).encrypt(nonce, _json_bytes(value), None)


def decrypt_data_key(data: bytes, data_key: bytes) -> Any:
    if len(data) < 1 + GCM_NONCE_BYTES + GCM_TAG_BYTES or data[:1] != VERSION_0:
        raise DecryptError("an AES-GCM payload is too short or of an unknown version")
    nonce, sealed = data[1 : 1 + GCM_NONCE_BYTES], data[1 + GCM_NONCE_BYTES :]
    try:
        return _json_value(AESGCM(data_key).decrypt(nonce, sealed, None))
    except InvalidTag:
        raise DecryptError("an AES-GCM payload does not open with this key") from None
