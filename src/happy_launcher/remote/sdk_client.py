"""What remote mode's driver needs of the Agent SDK's client: `ClaudeSDKClient` is the real one,
`remote/fake_sdk.FakeSdkClient` the one kept in memory for in-process tests."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any, Protocol

from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import Message, PermissionMode


class SdkClient(Protocol):
    """One connection to Claude: `connect`, then prompts in (`query`) and messages out
    (`receive_messages`, for the whole connection), `interrupt` the running turn, `disconnect`;
    `set_permission_mode` and `set_model` change them for the prompts that follow."""

    async def connect(self) -> None: ...

    async def query(self, prompt: AsyncIterable[dict[str, Any]]) -> None: ...

    def receive_messages(self) -> AsyncIterator[Message]: ...

    async def interrupt(self) -> None: ...

    async def set_permission_mode(self, mode: PermissionMode) -> None: ...

    async def set_model(self, model: str | None = None) -> None: ...

    async def disconnect(self) -> None: ...


# Builds the client of one connection from its options (`ClaudeSDKClient` itself, by default).
SdkClientFactory = Callable[[ClaudeAgentOptions], SdkClient]
