"""Which Happy server, and the HTTP calls to it (httpx; one small Protocol so the pairing loop is
tested with a fake)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ValidationError

from happy_launcher.errors import HappyServerError

SERVER_ENV = "HAPPY_SERVER_URL"
# The hosted server Happy's own CLI uses when nothing names another (its configuration.ts).
DEFAULT_SERVER = "https://api.cluster-fluster.com"
REQUEST_TIMEOUT = 15.0  # seconds for one HTTP call; the pairing's own bound is longer


def server_url(option: str | None, env: Mapping[str, str]) -> str:
    """`--server`, else HAPPY_SERVER_URL, else Happy's hosted server; without a trailing slash."""
    return (option or env.get(SERVER_ENV) or DEFAULT_SERVER).rstrip("/")


class AuthAnswer(BaseModel):
    """The server's answer to `POST /v1/auth/request`: still waiting, or the app's approval."""

    state: Literal["requested", "authorized"]
    token: str | None = None
    response: str | None = None


class AuthServer(Protocol):
    def request_auth(self, public_key: str) -> AuthAnswer: ...


class HttpServer:
    """Happy's server over HTTP; every failure is one HappyServerError naming the server."""

    def __init__(self, url: str) -> None:
        import httpx

        self.url = url
        self._client = httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT)

    def close(self) -> None:
        self._client.close()

    def request_auth(self, public_key: str) -> AuthAnswer:
        body = self._post("/v1/auth/request", {"publicKey": public_key, "supportsV2": True})
        try:
            return AuthAnswer.model_validate(body)
        except ValidationError:
            raise HappyServerError(f"Happy's server at {self.url} answered the login request oddly") from None

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        import httpx

        try:
            answer = self._client.post(path, json=body)
        except httpx.TransportError as exc:
            raise HappyServerError(
                f"cannot reach Happy's server at {self.url} ({type(exc).__name__}): "
                f"check the address (--server, {SERVER_ENV}) and the network"
            ) from None
        if answer.status_code != 200:
            raise HappyServerError(f"Happy's server at {self.url} refused {path} (HTTP {answer.status_code})")
        try:
            return answer.json()
        except ValueError:
            raise HappyServerError(f"Happy's server at {self.url} answered {path} with no JSON") from None
