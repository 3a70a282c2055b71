"""A Happy session's cipher (bridge/keys/cipher.py): both variants seal what they open, a dataKey
session's key reaches the app wrapped to the account's content key, and no key ever prints."""

from __future__ import annotations

import secrets

import pytest

from happy_launcher.bridge.keys.cipher import SessionCipher, new_session_cipher
from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import b64, content_keypair, unb64, unwrap_data_key
from happy_launcher.errors import DecryptError

SECRET = bytes(range(32))


def test_a_data_key_session_is_sealed_with_a_key_the_app_unwraps() -> None:
    content = content_keypair(SECRET)
    creds = Credentials(token="t", variant="dataKey", content_public=content.public, machine_key=b"m" * 32)
    cipher, wrapped = new_session_cipher(creds)
    assert cipher.variant == "dataKey" and wrapped is not None
    app_key = unwrap_data_key(unb64(wrapped), content.secret)  # what the app does with it
    assert SessionCipher("dataKey", app_key).open(cipher.seal({"text": "héllo"})) == {"text": "héllo"}
    assert new_session_cipher(creds)[0].key != cipher.key  # one key per session


def test_a_legacy_session_is_sealed_with_the_account_secret() -> None:
    cipher, wrapped = new_session_cipher(Credentials(token="t", variant="legacy", secret=SECRET))
    assert wrapped is None
    assert SessionCipher("legacy", SECRET).open(cipher.seal([1, "two"])) == [1, "two"]


@pytest.mark.parametrize("variant", ["legacy", "dataKey"])
def test_what_does_not_open_is_one_decrypt_error_and_no_key_prints(variant: str) -> None:
    key = secrets.token_bytes(32)
    cipher = SessionCipher("legacy" if variant == "legacy" else "dataKey", key)
    other = SessionCipher(cipher.variant, secrets.token_bytes(32))
    for bad in ("not base64!", b64(b"short"), other.seal({"x": 1})):
        with pytest.raises(DecryptError):
            cipher.open(bad)
    assert key.hex() not in repr(cipher) and b64(key) not in repr(cipher)
