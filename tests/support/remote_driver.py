"""Remote mode's driver in-process: a real Session (its store under tmp), the fake SDK client
replaying a recorded scenario (tests/fixtures/sdk), and that scenario's transcript written by the
test, record by record, as Claude would write it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import orjson
from claude_agent_sdk import ClaudeAgentOptions

from happy_launcher.protocol import Envelope, ToolCallEndEv, TurnEndEv
from happy_launcher.remote.driver import RemoteDriver
from happy_launcher.remote.fake_sdk import FakeSdkClient, OnInterrupt
from happy_launcher.session.core import Session
from tests.support.remote_feed import main_transcript
from tests.support.sdk_stream import Prompt, recorded_turns, scenario_dir


def kinds(envelopes: Sequence[Envelope]) -> list[str]:
    """Event types, with the status of a turn's end and of a tool call's end that did not succeed."""
    return [
        f"{e.ev.t}:{e.ev.status}" if isinstance(e.ev, TurnEndEv | ToolCallEndEv) and e.ev.status else e.ev.t
        for e in envelopes
    ]


class Committed:
    """A session subscriber: the envelopes committed, in order, and a wait for what a test expects."""

    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []
        self._changed = anyio.Event()

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        self.envelopes += envelopes
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, done: Callable[[list[str]], bool]) -> None:
        """Wait until `done(kinds of what was committed)`."""
        while not done(kinds(self.envelopes)):
            await self._changed.wait()

    async def turn_ends(self, count: int = 1) -> None:
        await self.until(lambda seen: sum(k.startswith("turn-end") for k in seen) >= count)

    def texts(self) -> list[str]:
        return [e.ev.text for e in self.envelopes if e.ev.t == "text"]


class Transcript:
    """A recorded transcript, written to `path` as Claude wrote it: up to a record at a time."""

    def __init__(self, recorded: Path, path: Path) -> None:
        self._lines = recorded.read_bytes().splitlines(keepends=True)
        self._written = 0
        self.path = path

    def rename(self, uuid: str, to: str) -> None:
        """Claude gave this record (a prompt sent under another uuid) the uuid `to`."""
        self._lines = [line.replace(uuid.encode(), to.encode()) for line in self._lines]

    def write_through(self, uuid: str | None = None) -> None:
        """Append the recorded lines up to the record `uuid` (to the end by default)."""
        end = len(self._lines)
        if uuid is not None:
            end = next(i for i, line in enumerate(self._lines) if orjson.loads(line).get("uuid") == uuid) + 1
        with self.path.open("ab") as out:
            out.writelines(self._lines[self._written : end])
        self._written = max(self._written, end)


@dataclass
class Driven:
    driver: RemoteDriver
    sdk: FakeSdkClient
    session: Session
    transcript: Transcript
    seen: Committed
    prompts: list[Prompt]  # the scenario's, in order
    ran: anyio.Event  # the driver's run is over

    async def stop(self) -> None:
        """Close the driver and wait for its run's end (the transcript's final read done)."""
        self.driver.close()
        await self.ran.wait()


async def claude_takes_prompts(sdk: FakeSdkClient, transcript: Transcript, recorded: list[Prompt]) -> None:
    """Claude writes each prompt's record as it takes it, under the uuid it was sent with."""
    for prompt in recorded:
        sent = await sdk.next_prompt()
        if prompt.uuid is not None:
            transcript.rename(prompt.uuid, sent["uuid"])
        transcript.write_through(sent["uuid"])


@asynccontextmanager
async def driven(
    tmp_path: Path,
    scenario: str,
    *,
    hold: bool = False,
    on_interrupt: OnInterrupt = "answer",
    refuse: str | None = None,
    takes: bool = True,
    take_timeout: float = 30.0,
    interrupt_grace: float = 30.0,
) -> AsyncIterator[Driven]:
    """The driver running on the scenario's Claude session; closed (and its run over) on the
    way out. `takes`: the prompts' records are written as Claude takes them (else by the test);
    `refuse`: the SDK's error for any setting (mode, model)."""
    turns = recorded_turns(scenario_dir(scenario))
    sdk = FakeSdkClient([turn for _, turn in turns], hold=hold, on_interrupt=on_interrupt, refuse=refuse)
    recorded = main_transcript(scenario_dir(scenario))
    project = tmp_path / "project"
    project.mkdir()  # watched from the start (Claude creates it before the transcript)
    transcript = Transcript(recorded, project / recorded.name)
    with Session(tmp_path / "home", tmp_path) as session:
        session.set_claude_session(recorded.stem, "startup", transcript.path)
        seen = Committed()
        session.subscribe(seen)
        driver = RemoteDriver(
            session,
            ClaudeAgentOptions(),
            transcript=lambda claude_id: project / f"{claude_id}.jsonl",
            claude_session_id=recorded.stem,
            client=sdk,
            take_timeout=take_timeout,
            interrupt_grace=interrupt_grace,
        )
        ran = anyio.Event()

        async def run(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            await driver.run(task_status=task_status)
            ran.set()

        async with anyio.create_task_group() as tg:
            await tg.start(run)
            try:
                async with anyio.create_task_group() as claude:
                    prompts = [p for p, _ in turns]
                    if takes:
                        claude.start_soon(claude_takes_prompts, sdk, transcript, prompts)
                    yield Driven(driver, sdk, session, transcript, seen, prompts, ran)
                    claude.cancel_scope.cancel()
            finally:
                driver.close()
