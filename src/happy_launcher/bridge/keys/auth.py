"""Happy's terminal pairing (`happy auth login`): an ephemeral box keypair shown to the app as a
`happy://terminal?…` link, the request polled until the app approves it, and the approval opened
into the credentials Happy's CLI would store (V1: the account secret; V2: the content public key,
plus a random machine key made here)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import (
    KEY_BYTES,
    BoxKeys,
    b64,
    b64url,
    new_box_keys,
    open_bundle,
    unb64,
)
from happy_launcher.bridge.keys.server import AuthServer
from happy_launcher.errors import DecryptError, PairingError

POLL_INTERVAL = 1.0  # seconds between polls, as Happy's CLI polls
PAIRING_BOUND = 600.0  # seconds the app has to approve
V2_MARK = 0x00  # the first byte of a V2 answer: 0x00 | content public key


@dataclass(frozen=True)
class Pairing:
    keys: BoxKeys = field(default_factory=new_box_keys)

    @property
    def link(self) -> str:
        return "happy://terminal?" + b64url(self.keys.public)


def wait_for_approval(
    pairing: Pairing,
    server: AuthServer,
    *,
    clock: Callable[[], float],
    wait: Callable[[float], None],
    announce: Callable[[], None],
    bound: float = PAIRING_BOUND,
) -> Credentials:
    """Poll until the app approves (the credentials) or `bound` seconds pass (PairingError).
    `announce` shows the link once the server holds the request (an unreachable server is one
    error line, not a code to scan that leads nowhere)."""
    deadline = clock() + bound
    announced = False
    while True:
        answer = server.request_auth(b64(pairing.keys.public))
        if answer.state == "authorized":
            if answer.token is None or answer.response is None:
                raise PairingError("the server approved the login without a token or an answer: try again")
            return open_approval(answer.token, answer.response, pairing.keys)
        if clock() + POLL_INTERVAL > deadline:
            raise PairingError(f"the app did not approve within {bound:.0f} s: run `happy auth login` again")
        if not announced:
            announce()
            announced = True
        wait(POLL_INTERVAL)


def open_approval(token: str, response: str, keys: BoxKeys) -> Credentials:
    try:
        plain = open_bundle(unb64(response), keys.secret)
    except (DecryptError, ValueError):
        raise PairingError("the app's answer does not open with this terminal's key: try again") from None
    if len(plain) == KEY_BYTES:
        return Credentials(token=token, variant="legacy", secret=plain)
    if len(plain) == 1 + KEY_BYTES and plain[0] == V2_MARK:
        return Credentials(
            token=token,
            variant="dataKey",
            content_public=plain[1:],
            machine_key=secrets.token_bytes(KEY_BYTES),
        )
    raise PairingError("the app's answer is neither a V1 nor a V2 approval: update happy, or try again")
