"""Happy's encryption: the key tree against privacy-kit's published vector, and every layout
round-trips, with the wrong key or damaged bytes refused."""

from __future__ import annotations

import hashlib
import secrets

import pytest
from nacl.public import PrivateKey

from happy_launcher.bridge.keys import crypto
from happy_launcher.errors import DecryptError

SECRET = bytes(range(32))
PAYLOAD = {"role": "session", "text": "héllo ✓", "n": [1, 2]}


def test_the_key_tree_matches_the_published_vector() -> None:
    # privacy-kit's deriveKey test vector (seed "test seed", usage "test usage", path child1/child2).
    key = crypto.derive_key(b"test seed", "test usage", ["child1", "child2"])
    assert key.hex().upper() == "1011C097D2105D27362B987A631496BBF68B836124D1D072E9D1613C6028CF75"
    root = crypto.derive_key(b"test seed", "test usage", [])
    assert root.hex().upper() == "E6E55652456F9FE47D6FF46CA3614E85B499F77E7B340FBBB1553307CEDC1E74"


def test_the_content_keypair_is_the_seed_keypair_of_the_content_key() -> None:
    keys = crypto.content_keypair(SECRET)
    seed = crypto.derive_key(SECRET, "Happy EnCoder", ["content"])
    assert keys.secret == hashlib.sha512(seed).digest()[:32]
    assert keys.public == bytes(PrivateKey(keys.secret).public_key)
    assert crypto.content_keypair(SECRET) == keys
    assert crypto.content_keypair(bytes(32)).public != keys.public
    assert crypto.b64(keys.secret) not in repr(keys)


def test_box_bundles_open_only_with_the_recipients_key() -> None:
    keys = crypto.new_box_keys()
    bundle = crypto.seal_bundle(b"secret", keys.public)
    assert len(bundle) == 32 + 24 + 16 + len(b"secret")
    assert crypto.open_bundle(bundle, keys.secret) == b"secret"
    with pytest.raises(DecryptError):
        crypto.open_bundle(bundle, crypto.new_box_keys().secret)
    with pytest.raises(DecryptError):
        crypto.open_bundle(bundle[:40], keys.secret)


def test_a_wrapped_data_key_opens_with_the_content_key() -> None:
    content = crypto.content_keypair(SECRET)
    data_key = secrets.token_bytes(32)
    wrapped = crypto.wrap_data_key(data_key, content.public)
    assert wrapped[0] == 0 and len(wrapped) == 1 + 32 + 24 + 16 + 32
    assert crypto.unwrap_data_key(wrapped, content.secret) == data_key
    with pytest.raises(DecryptError):
        crypto.unwrap_data_key(b"\x01" + wrapped[1:], content.secret)


def test_aes_gcm_payloads_have_happys_layout() -> None:
    key = secrets.token_bytes(32)
    sealed = crypto.encrypt_data_key(PAYLOAD, key)
    plain = b'{"role":"session","text":"h\xc3\xa9llo \xe2\x9c\x93","n":[1,2]}'  # as JSON.stringify
    assert sealed[0] == 0 and len(sealed) == 1 + 12 + len(plain) + 16
    assert crypto.decrypt_data_key(sealed, key) == PAYLOAD
    for bad in (sealed[:-1] + bytes([sealed[-1] ^ 1]), b"\x01" + sealed[1:], sealed[:20]):
        with pytest.raises(DecryptError):
            crypto.decrypt_data_key(bad, key)
    with pytest.raises(DecryptError):
        crypto.decrypt_data_key(sealed, secrets.token_bytes(32))


def test_legacy_payloads_are_secretboxes_under_the_account_secret() -> None:
    sealed = crypto.encrypt_legacy(PAYLOAD, SECRET)
    assert crypto.decrypt_legacy(sealed, SECRET) == PAYLOAD
    for bad in (sealed[:10], sealed[:-1] + bytes([sealed[-1] ^ 1])):
        with pytest.raises(DecryptError):
            crypto.decrypt_legacy(bad, SECRET)
    with pytest.raises(DecryptError):
        crypto.decrypt_legacy(sealed, bytes(32))


def test_the_link_carries_unpadded_base64url() -> None:
    assert crypto.b64url(b"\xfb\xff") == "-_8"
    assert crypto.unb64(crypto.b64(b"\xfb\xff")) == b"\xfb\xff"
