"""The HTTP client of Happy's session calls (bridge/link/api.py) over httpx's MockTransport: the
requests it makes, the answers it reads, and every failure one HappyServerError naming the
server and the call, never the token."""

from __future__ import annotations

import json

import httpx
import pytest

from happy_launcher.bridge.link.api import Fetched, HttpHappyApi, Posted
from happy_launcher.errors import HappyServerError, HappyUnauthorizedError

pytestmark = pytest.mark.anyio
URL = "http://happy.test"
TOKEN = "secret-token-123"
SESSION = {
    "id": "h1",
    "seq": 0,
    "metadata": "bWV0YQ==",
    "metadataVersion": 0,
    "agentState": None,
    "agentStateVersion": 0,
    "dataEncryptionKey": "a2V5",
    "active": True,
    "createdAt": 1,
}


def api(handler: httpx.MockTransport) -> HttpHappyApi:
    return HttpHappyApi(URL, TOKEN, transport=handler)


async def test_the_calls_are_the_servers_routes_with_the_token() -> None:
    seen: list[tuple[str, str, object]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        body = json.loads(request.content) if request.content else dict(request.url.params)
        seen.append((request.method, request.url.path, body))
        if request.url.path == "/v1/sessions":
            return httpx.Response(200, json={"session": SESSION})
        if request.method == "POST":
            return httpx.Response(
                200, json={"messages": [{"id": "m1", "seq": 4, "localId": "e1", "createdAt": 1}]}
            )
        row = {"id": "m1", "seq": 4, "content": {"t": "encrypted", "c": "Yw=="}, "localId": None}
        return httpx.Response(200, json={"messages": [row], "hasMore": True})

    client = api(httpx.MockTransport(handle))
    remote = await client.create_session("tag", "bWV0YQ==", None, "a2V5")
    assert (remote.id, remote.dataEncryptionKey) == ("h1", "a2V5")
    assert await client.post_messages("h1", [("e1", "Yw==")]) == [Posted(id="m1", seq=4, localId="e1")]
    assert await client.fetch_messages("h1", 3, 10) == ([Fetched(id="m1", seq=4, content="Yw==")], True)
    await client.aclose()
    assert seen == [
        (
            "POST",
            "/v1/sessions",
            {"tag": "tag", "metadata": "bWV0YQ==", "agentState": None, "dataEncryptionKey": "a2V5"},
        ),
        ("POST", "/v3/sessions/h1/messages", {"messages": [{"localId": "e1", "content": "Yw=="}]}),
        ("GET", "/v3/sessions/h1/messages", {"after_seq": "3", "limit": "10"}),
    ]


@pytest.mark.parametrize(
    ("answer", "error", "text"),
    [
        (
            httpx.Response(401),
            HappyUnauthorizedError,
            "refused the credentials to post messages: run `happy auth login`",
        ),
        (httpx.Response(500), HappyServerError, "refused to post messages (HTTP 500)"),
        (httpx.Response(200, text="<html>"), HappyServerError, "answered post messages with no JSON"),
        (httpx.Response(200, json={"messages": [{}]}), HappyServerError, "answered post messages oddly"),
    ],
)
async def test_a_failure_is_one_error_naming_the_server_and_the_call(
    answer: httpx.Response, error: type[Exception], text: str
) -> None:
    client = api(httpx.MockTransport(lambda _: answer))
    with pytest.raises(error) as caught:
        await client.post_messages("h1", [("e1", "Yw==")])
    assert str(caught.value) == f"Happy's server at {URL} {text}"
    assert TOKEN not in str(caught.value)


async def test_an_unreachable_server_is_one_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(HappyServerError) as caught:
        await api(httpx.MockTransport(refuse)).fetch_messages("h1", 0)
    assert str(caught.value) == f"cannot reach Happy's server at {URL} to fetch messages (ConnectError)"
    assert not isinstance(caught.value, HappyUnauthorizedError)
