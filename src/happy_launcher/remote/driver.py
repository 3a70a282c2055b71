"""Remote mode's engine: one `ClaudeSDKClient` on the session's Claude session (design §4).

Two feeds go into the session's one mirror, deduped by record uuid (first arrival wins):
- the SDK's messages, converted to transcript-shaped records (`claude/converter.py`), in the
  order the client yields them, for speed;
- the transcript tail, for what the SDK never emits (attachments, `api_error` records, resume
  repairs).
A prompt is sent with a uuid of ours, which Claude gives to its transcript record: the prompt
(user text, turn-start) is committed once that record is on disk (Claude has taken it: an
inbound message is marked delivered with it), before anything later of its turn; the
transcript's copy is the same record, so it is never mapped twice. Turns end with the SDK's
`ResultMessage` (SDK transcripts have no `turn_duration`).

A resumed happy session first reads what Claude wrote while happy was down (a prompt taken
just before happy died, and its reply), before connecting.
"""

from __future__ import annotations

import logging
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
import anyio.lowlevel
from claude_agent_sdk import CanUseToolShadowedWarning, ClaudeAgentOptions, ClaudeSDKClient

from happy_launcher.claude.converter import Converter
from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.claude.queue import Notice, OrderedQueue, PromptSent, QueueTarget, Taken
from happy_launcher.claude.records import Record
from happy_launcher.claude.scanner import TranscriptScanner
from happy_launcher.claude.sdk_items import Partial, SessionStarted
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.claude.watch import make_watcher
from happy_launcher.errors import RemoteError
from happy_launcher.protocol import TurnStatus
from happy_launcher.remote.claude_stderr import ClaudeStderr
from happy_launcher.remote.sdk_client import SdkClient, SdkClientFactory
from happy_launcher.session.ports import NO_META, MessageMeta

_log = logging.getLogger(__name__)
INTERRUPT_GRACE = 5.0  # seconds Claude gets to end an interrupted turn before we end it ourselves
# Seconds a prompt waits for its record on disk (2-183 ms measured) before its turn goes on.
TAKE_TIMEOUT = 30.0
_S = TypeVar("_S", bound=str)


class MirrorPort(QueueTarget, Protocol):
    """What the driver needs of the session's mirror (`session/mirror.Mirror`): the ordered
    queue's target, and the turn a prompt opened."""

    @property
    def turn(self) -> str | None: ...

    def finish(self) -> object: ...

    def notice(self, text: str) -> object: ...


class SessionPort(Protocol):
    """What the driver needs of the session (`session/core.Session`)."""

    @property
    def mirror(self) -> MirrorPort: ...

    def set_claude_session(self, claude_session_id: str, source: str, transcript: Path | None) -> None: ...

    def history_sizes(self, sizes: Mapping[Path, int]) -> Mapping[Path, int]: ...


@dataclass(frozen=True, slots=True)
class SentPrompt:
    uuid: str  # the prompt's transcript record (and its user envelope's `claudeUuid`)
    turn: str  # the turn it opened


class _Target:
    """The queue's target: the session's mirror, noting when a prompt (and the turn it
    opened) and when a turn's result is applied."""

    def __init__(
        self,
        mirror: MirrorPort,
        on_result: Callable[[], None],
        on_prompt: Callable[[str | None, str | None], None],
    ) -> None:
        self._mirror = mirror
        self._on_result = on_result
        self._on_prompt = on_prompt

    def batch(self) -> AbstractContextManager[object]:
        return self._mirror.batch()

    def deliver(self, records: Sequence[Record]) -> object:
        return self._mirror.deliver(records)

    def prompt_sent(self, text: str, uuid: str | None = None, *, taken: bool = True) -> object:
        done = self._mirror.prompt_sent(text, uuid, taken=taken)
        self._on_prompt(uuid, self._mirror.turn)
        return done

    def end_turn(
        self, status: TurnStatus, service: str | None = None, *, taken: tuple[str, ...] | None = None
    ) -> object:
        done = self._mirror.end_turn(status, service, taken=taken)
        self._on_result()
        return done

    def close_turn(self, status: TurnStatus) -> object:
        done = self._mirror.close_turn(status)
        self._on_result()
        return done


class RemoteDriver:
    """Sends prompts to Claude through the SDK and reads everything back into the session, all
    through one ordered queue (SDK records, transcript records, prompts, turn results).

    `run()` connects and serves until `close()`; `send()` starts a turn, `interrupt()` ends the
    running one `cancelled`. `on_partial` sees streaming text (a preview, never stored).
    `client` builds the SDK client (a fake in tests); `take_timeout` bounds the prompt's wait
    for its record, `interrupt_grace` Claude's ending of an interrupted turn."""

    def __init__(
        self,
        session: SessionPort,
        options: ClaudeAgentOptions,
        *,
        transcript: Callable[[str], Path],
        claude_session_id: str,
        on_partial: Callable[[Partial], None] | None = None,
        client: SdkClientFactory = ClaudeSDKClient,
        take_timeout: float = TAKE_TIMEOUT,
        interrupt_grace: float = INTERRUPT_GRACE,
    ) -> None:
        self._session = session
        self._options = options
        self._make_client = client
        self._take_timeout = take_timeout
        self._interrupt_grace = interrupt_grace
        self._stderr = ClaudeStderr()
        options.stderr = self._stderr.line
        self._transcript = transcript
        self.claude_session_id = claude_session_id
        self._on_partial = on_partial
        self._converter = Converter()
        self._queue = OrderedQueue()
        self._client: SdkClient | None = None
        self._watcher = make_watcher()
        self._scanner = TranscriptScanner(SessionFiles(clock=time.monotonic), self._watcher)
        self._tailed: set[str] = set()
        self._prompts: dict[str, _Prompt] = {}  # sent, waiting for their record on disk
        self.sent: set[str] = set()  # uuids of the prompts sent in this connection
        # What Claude runs with now, as far as we know (None: Claude's own default).
        self.permission_mode: str | None = options.permission_mode
        self.model: str | None = options.model
        self._behind = False  # the transcript holds more than the session mirrored (`_catch_up`)
        self._idle = anyio.Event()
        self._idle.set()
        self._stopping = anyio.Event()

    @property
    def busy(self) -> bool:
        """A turn is running (sent, and its result not yet applied)."""
        return not self._idle.is_set()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self._tail(self.claude_session_id, history=True)
        target = _Target(self._session.mirror, lambda: self._idle.set(), self._applied)
        try:
            await self._catch_up()
            async with anyio.create_task_group() as queue_tg:
                queue_tg.start_soon(self._queue.run, target, self._notice)
                try:
                    await self._serve(task_status)
                finally:
                    self._queue.close()  # the consumer applies what is queued, then returns
            # Drained: what the transcript still holds goes straight to the mirror, in order.
            self._session.mirror.deliver(_flatten(self._scanner.final_batches()))
        finally:
            self._watcher.close()

    async def _serve(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            await self._connected(task_status)
        except Exception as exc:
            failure = self._stderr.failure(exc)
            if failure is None:
                raise
            raise failure from exc

    async def _connected(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        client = self._make_client(self._options)
        with warnings.catch_warnings():
            # Our callback is meant to be passed over under bypass or allowed tools: it is there for
            # the tools (and later modes) that still ask. The SDK's advice would reach the terminal.
            warnings.simplefilter("ignore", CanUseToolShadowedWarning)
            await client.connect()
        try:
            async with anyio.create_task_group() as tg:
                self._client = client
                tg.start_soon(self._read, client)
                tg.start_soon(self._scanner.run, self._from_transcript)
                task_status.started()
                self._stderr.started()
                await self._stopping.wait()
                if self.busy:  # never a bare disconnect of a busy client: it waits for the turn
                    await self._interrupt(client)
                tg.cancel_scope.cancel()
        finally:
            self._client = None
            await client.disconnect()

    def close(self) -> None:
        self._stopping.set()
        for prompt in self._prompts.values():  # the final read of the transcript tells
            prompt.settle("skip")

    async def send(
        self, text: str, prompt_uuid: str | None = None, meta: MessageMeta = NO_META
    ) -> SentPrompt:
        """Send a prompt (under `prompt_uuid`, default a new one), `meta` applied first; returns
        once its user text and turn-start are committed, which is once Claude has written its
        record (or after the take timeout: then its turn goes on, and the record counts when it
        comes)."""
        client = self._require_client()
        await self._apply(client, meta)
        prompt_uuid = prompt_uuid or str(uuid.uuid4())
        prompt = self._prompts[prompt_uuid] = _Prompt()
        self.sent.add(prompt_uuid)
        self._idle = anyio.Event()
        # Queued first: nothing of its turn can get ahead of it.
        self._queue.put(PromptSent(text, prompt_uuid, taken=lambda: self._taken(prompt_uuid, prompt)))
        message = {"role": "user", "content": text}
        try:
            await client.query(
                _one({"type": "user", "message": message, "parent_tool_use_id": None, "uuid": prompt_uuid})
            )
        except BaseException:
            prompt.settle("skip")  # Claude never got it
            self._idle.set()
            raise
        await prompt.applied.wait()
        if prompt.turn is None:
            self._idle.set()
            raise RemoteError("remote mode stopped before Claude took the prompt: send it again")
        return SentPrompt(prompt_uuid, prompt.turn)

    async def _apply(self, client: SdkClient, meta: MessageMeta) -> None:
        """A message's permission mode and model, set on the live client before its prompt: they
        hold from it on, as in Happy. A failure is said in a service envelope; the prompt goes."""
        mode, model = meta.permission_mode, meta.model
        if mode not in (None, self.permission_mode) and await self._setting(
            "permission mode", mode, client.set_permission_mode
        ):
            self.permission_mode = mode
        if model not in (None, self.model) and await self._setting("model", model, client.set_model):
            self.model = model

    async def _setting(self, what: str, value: _S, setter: Callable[[_S], Awaitable[None]]) -> bool:
        try:
            await setter(value)
        except Exception as exc:  # Claude's refusal comes as a bare Exception from the SDK
            _log.warning("setting the %s to %s failed: %s", what, value, exc)
            self._session.mirror.notice(
                f"Claude's {what} could not be set to {value} ({exc}): the message was sent without it."
            )
            return False
        return True

    async def _taken(self, prompt_uuid: str, prompt: _Prompt) -> Taken:
        with anyio.move_on_after(self._take_timeout):
            await prompt.settled.wait()
        if prompt.outcome is None:
            _log.warning("Claude did not write prompt %s within %s s", prompt_uuid, self._take_timeout)
            prompt.settle("late")
        if prompt.outcome == "skip":
            self._prompts.pop(prompt_uuid, None)
            prompt.applied.set()  # not applied: `send` learns it (no turn)
        assert prompt.outcome is not None
        return prompt.outcome

    def _applied(self, prompt_uuid: str | None, turn: str | None) -> None:
        prompt = self._prompts.pop(prompt_uuid) if prompt_uuid in self._prompts else None
        if prompt is not None:
            prompt.turn = turn
            prompt.applied.set()

    async def interrupt(self) -> None:
        """End the running turn `cancelled` (Claude's own interrupt: 11-44 ms)."""
        if self.busy:
            await self._interrupt(self._require_client())

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def _interrupt(self, client: SdkClient) -> None:
        idle = self._idle
        # The grace bounds the interrupt's answer too (the SDK waits 60 s for it).
        with anyio.move_on_after(self._interrupt_grace):
            await client.interrupt()
            await idle.wait()
            return
        # Claude did not end the turn: close it ourselves, tool calls first (design §4).
        _log.warning("Claude did not end the interrupted turn within %s s", self._interrupt_grace)
        self._queue.abort(self._converter.interrupted())
        await self._queue.flushed()

    def _require_client(self) -> SdkClient:
        if self._client is None:
            raise RemoteError("remote mode is not connected to Claude (it ended, or never started)")
        return self._client

    async def _read(self, client: SdkClient) -> None:
        async for message in client.receive_messages():
            self._queue.put_all(self._converter.convert(message))

    def _from_transcript(self, batch: list[Record]) -> None:
        if self._prompts:  # straight from the scanner: the queue is held up by the prompt
            for record in batch:
                prompt = self._prompts.get(record.uuid) if record.uuid is not None else None
                if prompt is not None:
                    prompt.settle("taken")
        self._queue.put_all(batch)

    async def _catch_up(self) -> None:
        """Before connecting: what the transcript holds that the session has not mirrored (a
        resumed happy session that died) goes to the mirror, and the turn it opened, which no
        result will end, is closed as a replay would close it."""
        if not self._behind:
            return
        mirror, mapped = self._session.mirror, False
        while True:
            mapped |= bool(mirror.deliver(self._scanner.scan(final=True)))
            if not self._scanner.files.behind:
                break
            await anyio.lowlevel.checkpoint()  # a long backlog does not block the loop
        if mapped and mirror.turn is not None:
            mirror.finish()

    def _notice(self, notice: Notice) -> None:
        if isinstance(notice, Partial):
            if self._on_partial is not None:
                self._on_partial(notice)
        elif isinstance(notice, SessionStarted) and notice.session_id != self.claude_session_id:
            # Claude moved on to another session id (a /clear, a fork): follow it.
            self.claude_session_id = notice.session_id
            self._session.set_claude_session(
                notice.session_id, "startup", self._transcript(notice.session_id)
            )
            self._tail(notice.session_id, history=False)

    def _tail(self, claude_session_id: str, *, history: bool) -> None:
        if claude_session_id in self._tailed:
            return
        self._tailed.add(claude_session_id)
        path = self._transcript(claude_session_id)
        if history:
            sizes = ExistingFiles.of_sessions([path]).sizes
            known = self._session.history_sizes(sizes)
            self._behind = any(known.get(p, 0) < size for p, size in sizes.items())
        else:
            known = {}
        self._scanner.add_main(path, known=known)


class _Prompt:
    """A prompt sent, until its wait ends (see `Taken`)."""

    def __init__(self) -> None:
        self.settled = anyio.Event()
        self.outcome: Taken | None = None
        self.applied = anyio.Event()  # its prompt_sent applied (or skipped)
        self.turn: str | None = None  # the turn it opened

    def settle(self, outcome: Taken) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.settled.set()


def _flatten(batches: Iterator[list[Record]]) -> list[Record]:
    return [record for batch in batches for record in batch]


async def _one(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield message
