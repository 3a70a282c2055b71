"""An Agent SDK client kept in memory, beside the real one (`ClaudeSDKClient`): remote mode's
driver runs against it in-process. It replays what Claude said in a recorded run, one turn per
prompt, and records what the driver asked (`calls`: settings and prompts, in order); a test that
`hold`s it decides when each message arrives (to race the SDK feed against the transcript's)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import Message, PermissionMode

# What the fake does when interrupted: say the rest of the turn (`FakeTurn.after_interrupt`),
# say nothing, or never answer the interrupt at all.
OnInterrupt = Literal["answer", "ignore", "hang"]


@dataclass(frozen=True, slots=True)
class FakeTurn:
    """What Claude says to one prompt: `messages` at once, `after_interrupt` once interrupted."""

    messages: Sequence[Message]
    after_interrupt: Sequence[Message] = ()


class FakeSdkClient:
    """Also its own factory (`RemoteDriver(client=fake)`): one connection. `hold`: messages
    wait in `held` until `release`d. `refuse`: what setting a mode or model raises, as Claude's
    refusal would."""

    def __init__(
        self,
        turns: Sequence[FakeTurn] = (),
        *,
        hold: bool = False,
        on_interrupt: OnInterrupt = "answer",
        refuse: str | None = None,
    ) -> None:
        self._turns = list(turns)
        self._turn: FakeTurn | None = None
        self._hold = hold
        self._on_interrupt = on_interrupt
        self.options: ClaudeAgentOptions | None = None
        self.disconnected = False
        self.prompts: list[dict[str, Any]] = []  # the user messages the driver sent, in order
        # In order: ("permission_mode", mode), ("model", name), ("query", the prompt's uuid).
        self.calls: list[tuple[str, str | None]] = []
        self._refuse = refuse
        self.interrupts = 0
        self.held: list[Message] = []
        self._out, self._in = anyio.create_memory_object_stream[Message](math.inf)
        self._prompt_out, self._prompt_in = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        self._sent = self._read = 0
        self._all_read = anyio.Event()
        self._all_read.set()

    def __call__(self, options: ClaudeAgentOptions) -> FakeSdkClient:
        self.options = options
        return self

    # --- SdkClient ------------------------------------------------------------------------------

    async def connect(self) -> None:
        pass

    async def query(self, prompt: AsyncIterable[dict[str, Any]]) -> None:
        async for message in prompt:
            self.prompts.append(message)
            self.calls.append(("query", message.get("uuid")))
            self._turn = self._turns.pop(0) if self._turns else FakeTurn(())
            self._say(self._turn.messages)
            self._prompt_out.send_nowait(message)

    async def receive_messages(self) -> AsyncIterator[Message]:
        async for message in self._in:
            yield message
            self._read += 1  # the reader is back for the next one: it has taken this one
            if self._read == self._sent:
                self._all_read.set()

    async def interrupt(self) -> None:
        self.interrupts += 1
        if self._on_interrupt == "hang":
            await anyio.sleep_forever()
        if self._on_interrupt == "answer" and self._turn is not None:
            self._say(self._turn.after_interrupt)

    async def set_permission_mode(self, mode: PermissionMode) -> None:
        self._setting("permission_mode", mode)

    async def set_model(self, model: str | None = None) -> None:
        self._setting("model", model)

    def _setting(self, name: str, value: str | None) -> None:
        if self._refuse is not None:
            raise Exception(self._refuse)  # noqa: TRY002 (the SDK's own: Claude's error answer)
        self.calls.append((name, value))

    async def disconnect(self) -> None:
        self.disconnected = True
        self._out.close()

    # --- the test's side ------------------------------------------------------------------------

    def release(self, count: int | None = None) -> None:
        """Send the first `count` held messages (all by default)."""
        count = len(self.held) if count is None else count
        messages, self.held = self.held[:count], self.held[count:]
        self._send(messages)

    async def next_prompt(self) -> dict[str, Any]:
        """The next user message the driver sends (waits for it)."""
        return await self._prompt_in.receive()

    async def all_read(self) -> None:
        """Wait until the driver has taken every message sent so far."""
        await self._all_read.wait()

    def _say(self, messages: Sequence[Message]) -> None:
        if self._hold:
            self.held += messages
        else:
            self._send(messages)

    def _send(self, messages: Sequence[Message]) -> None:
        for message in messages:
            self._out.send_nowait(message)
            self._sent += 1
            if self._all_read.is_set():
                self._all_read = anyio.Event()
