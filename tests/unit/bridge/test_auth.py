"""The pairing loop against a scripted server and a fake clock: polls until approved, shows the
link once the request is held, stops at its bound, and opens both approvals (V1, V2)."""

from __future__ import annotations

import pytest

from happy_launcher.bridge.keys.auth import PAIRING_BOUND, Pairing, wait_for_approval
from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import b64, b64url, content_keypair, seal_bundle
from happy_launcher.bridge.keys.server import DEFAULT_SERVER, AuthAnswer, server_url
from happy_launcher.errors import PairingError

SECRET = bytes(range(32))


class ScriptedServer:
    def __init__(self, answers: list[AuthAnswer]) -> None:
        self.answers, self.asked = answers, list[str]()

    def request_auth(self, public_key: str) -> AuthAnswer:
        self.asked.append(public_key)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += seconds


def approved(pairing: Pairing, plain: bytes) -> AuthAnswer:
    return AuthAnswer(state="authorized", token="tok", response=b64(seal_bundle(plain, pairing.keys.public)))


def run(
    pairing: Pairing, server: ScriptedServer, clock: Clock, shown: list[str], bound: float = PAIRING_BOUND
) -> Credentials:
    def announce() -> None:
        shown.append(pairing.link)

    return wait_for_approval(pairing, server, clock=clock, wait=clock.wait, announce=announce, bound=bound)


def test_v2_approval_after_polls_gives_datakey_credentials() -> None:
    pairing, clock, shown = Pairing(), Clock(), list[str]()
    content = content_keypair(SECRET).public
    waiting = AuthAnswer(state="requested")
    server = ScriptedServer([waiting, waiting, approved(pairing, b"\x00" + content)])
    credentials = run(pairing, server, clock, shown)
    assert (credentials.variant, credentials.token, credentials.content_public) == ("dataKey", "tok", content)
    assert len(credentials.machine_key) == 32
    assert server.asked == [b64(pairing.keys.public)] * 3
    assert shown == ["happy://terminal?" + b64url(pairing.keys.public)]  # once
    assert clock.now == 2.0


def test_v1_approval_gives_the_legacy_secret() -> None:
    pairing = Pairing()
    credentials = run(pairing, ScriptedServer([approved(pairing, SECRET)]), Clock(), [])
    assert (credentials.variant, credentials.secret) == ("legacy", SECRET)


@pytest.mark.parametrize("plain", [b"\x01" + bytes(32), bytes(5)])
def test_an_answer_neither_v1_nor_v2_is_refused(plain: bytes) -> None:
    pairing = Pairing()
    with pytest.raises(PairingError, match="neither a V1 nor a V2"):
        run(pairing, ScriptedServer([approved(pairing, plain)]), Clock(), [])


def test_an_answer_for_another_terminal_is_refused() -> None:
    pairing = Pairing()
    with pytest.raises(PairingError, match="does not open"):
        run(pairing, ScriptedServer([approved(Pairing(), SECRET)]), Clock(), [])


def test_no_approval_within_the_bound_is_one_error() -> None:
    clock = Clock()
    with pytest.raises(PairingError, match="did not approve within 5 s"):
        run(Pairing(), ScriptedServer([AuthAnswer(state="requested")]), clock, [], bound=5)
    assert clock.now <= 5


def test_the_server_is_the_option_then_the_environment_then_happys() -> None:
    env = {"HAPPY_SERVER_URL": "http://env:1/"}
    assert server_url("http://opt:2/", env) == "http://opt:2"
    assert server_url(None, env) == "http://env:1"
    assert server_url(None, {}) == DEFAULT_SERVER == "https://api.cluster-fluster.com"
