"""The HTTP calls the bridge makes to Happy's server for sessions and their messages
(happy-server-facts.md, "Sessions and messages"): one small Protocol, the real client on
httpx.AsyncClient here, the in-memory fake in `fake_api.py`. Every payload is already sealed:
this layer sees only ciphertext."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from happy_launcher.errors import HappyServerError, HappyUnauthorizedError

MAX_BATCH = 100  # messages per post: the server refuses more
MAX_FETCH = 500  # messages per fetch: the server's limit
REQUEST_TIMEOUT = 30.0
_M = TypeVar("_M", bound=BaseModel)


class RemoteSession(BaseModel):
    """A session as `POST /v1/sessions` answers it (the fields the bridge reads)."""

    id: str
    seq: int
    metadata: str
    metadataVersion: int
    agentState: str | None = None
    agentStateVersion: int
    dataEncryptionKey: str | None = None


class Posted(BaseModel):
    id: str
    seq: int
    localId: str


class Fetched(BaseModel):
    id: str
    seq: int
    content: str  # the `c` of `{t: "encrypted", c}`
    localId: str | None = None


class HappyApi(Protocol):
    async def create_session(
        self, tag: str, metadata: str, agent_state: str | None, data_key: str | None
    ) -> RemoteSession:
        """Get or create the account's session `tag`: an existing one comes back unchanged."""
        ...

    async def post_messages(self, happy_id: str, messages: Sequence[tuple[str, str]]) -> list[Posted]:
        """Post 1..MAX_BATCH (localId, sealed content) pairs; a known localId answers its row."""
        ...

    async def fetch_messages(
        self, happy_id: str, after_seq: int, limit: int = MAX_FETCH
    ) -> tuple[list[Fetched], bool]:
        """The messages after `after_seq`, ascending, and whether more follow."""
        ...

    async def create_machine(self, machine_id: str, metadata: str, data_key: str | None) -> None:
        """Register this machine (get-or-create by id: an existing one is left as it is)."""
        ...


class _Session(BaseModel):
    session: RemoteSession


class _PostAnswer(BaseModel):
    messages: list[Posted]


class _Content(BaseModel):
    c: str


class _Row(BaseModel):
    id: str
    seq: int
    content: _Content
    localId: str | None = None


class _FetchAnswer(BaseModel):
    messages: list[_Row]
    hasMore: bool


class HttpHappyApi:
    """Happy's server over HTTP; every failure is one HappyServerError naming the server and the
    call (HappyUnauthorizedError for a refused token), never the token."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = REQUEST_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,  # tests: httpx.MockTransport
    ) -> None:
        self.url = url
        self._client = httpx.AsyncClient(
            base_url=url, timeout=timeout, headers={"Authorization": f"Bearer {token}"}, transport=transport
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def create_session(
        self, tag: str, metadata: str, agent_state: str | None, data_key: str | None
    ) -> RemoteSession:
        body = {"tag": tag, "metadata": metadata, "agentState": agent_state, "dataEncryptionKey": data_key}
        answer = await self._call("create a session", "POST", "/v1/sessions", json=body)
        return self._parse(_Session, answer, "create a session").session

    async def post_messages(self, happy_id: str, messages: Sequence[tuple[str, str]]) -> list[Posted]:
        body = {"messages": [{"localId": local_id, "content": content} for local_id, content in messages]}
        answer = await self._call("post messages", "POST", f"/v3/sessions/{happy_id}/messages", json=body)
        return self._parse(_PostAnswer, answer, "post messages").messages

    async def fetch_messages(
        self, happy_id: str, after_seq: int, limit: int = MAX_FETCH
    ) -> tuple[list[Fetched], bool]:
        params = {"after_seq": after_seq, "limit": limit}
        answer = await self._call("fetch messages", "GET", f"/v3/sessions/{happy_id}/messages", params=params)
        page = self._parse(_FetchAnswer, answer, "fetch messages")
        rows = [Fetched(id=r.id, seq=r.seq, content=r.content.c, localId=r.localId) for r in page.messages]
        return rows, page.hasMore

    async def create_machine(self, machine_id: str, metadata: str, data_key: str | None) -> None:
        body: dict[str, Any] = {"id": machine_id, "metadata": metadata}
        if data_key is not None:
            body["dataEncryptionKey"] = data_key
        await self._call("register this machine", "POST", "/v1/machines", json=body)

    async def _call(self, what: str, method: str, path: str, **kw: Any) -> Any:
        try:
            answer = await self._client.request(method, path, **kw)
        except httpx.TransportError as exc:
            raise HappyServerError(
                f"cannot reach Happy's server at {self.url} to {what} ({type(exc).__name__})"
            ) from None
        if answer.status_code == 401:
            raise HappyUnauthorizedError(
                f"Happy's server at {self.url} refused the credentials to {what}: run `happy auth login`"
            )
        if answer.status_code != 200:
            raise HappyServerError(
                f"Happy's server at {self.url} refused to {what} (HTTP {answer.status_code})"
            )
        try:
            return answer.json()
        except ValueError:
            raise HappyServerError(f"Happy's server at {self.url} answered {what} with no JSON") from None

    def _parse(self, model: type[_M], body: Any, what: str) -> _M:
        try:
            return model.model_validate(body)
        except ValidationError:
            raise HappyServerError(f"Happy's server at {self.url} answered {what} oddly") from None
