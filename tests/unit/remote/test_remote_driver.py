"""Remote mode's driver in-process, against the fake SDK client replaying recorded streams: the
prompt gate, the two feeds racing, and an interrupt's grace (no Claude, milliseconds each)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from happy_launcher.protocol import Cuid2Ids, ServiceEv
from happy_launcher.remote.driver import SentPrompt
from happy_launcher.remote.fake_sdk import OnInterrupt
from happy_launcher.remote.remote_session import RemoteSession
from happy_launcher.session.permissions import PermissionBroker
from happy_launcher.session.ports import MessageMeta
from tests.support.remote_driver import driven, kinds
from tests.support.remote_feed import envelope_view, replayed
from tests.support.sdk_stream import scenario_dir

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]

BOUND = 5  # seconds: only a broken driver gets near it


# --- the prompt gate -----------------------------------------------------------------------------


async def test_a_prompt_and_its_turn_wait_for_claudes_record_of_it(tmp_path: Path) -> None:
    async with driven(tmp_path, "text", takes=False) as d:
        [prompt] = d.prompts
        sent: list[SentPrompt] = []

        async def send() -> None:
            sent.append(await d.driver.send(prompt.text, prompt.uuid))

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                tg.start_soon(send)
                await d.sdk.next_prompt()
                await d.sdk.all_read()  # the whole turn is queued, its result included
                await anyio.wait_all_tasks_blocked()
                assert d.seen.envelopes == [] and not sent  # all of it waits for the record
                d.transcript.write_through(prompt.uuid)
            await d.seen.turn_ends()
    assert kinds(d.seen.envelopes) == ["text", "turn-start", "text", "turn-end:completed"]
    [user, start, *_] = d.seen.envelopes
    assert user.role == "user" and user.claudeUuid == prompt.uuid and sent[0].turn == start.turn


async def test_a_prompt_whose_record_never_comes_goes_on_after_the_bound(tmp_path: Path) -> None:
    async with driven(tmp_path, "text", takes=False, take_timeout=0.02) as d:
        [prompt] = d.prompts
        d.session.accept_inbound("m-1", prompt.text)
        [inbound] = d.session.pending_prompts()
        assert prompt.uuid is not None
        d.transcript.rename(prompt.uuid, inbound.uuid)  # sent under the stored message's uuid
        with anyio.fail_after(BOUND):
            await d.driver.send(prompt.text, inbound.uuid)
            await d.seen.turn_ends()
        assert d.session.has_pending()  # not taken yet: the record tells
        d.transcript.write_through()  # it comes late, with the rest
        await d.stop()
        assert not d.session.has_pending()  # the late record counted
    assert kinds(d.seen.envelopes) == ["text", "turn-start", "text", "turn-end:completed"]  # its text once


# --- a message's permission mode and model ---------------------------------------------------------


async def test_a_messages_mode_and_model_are_set_before_its_prompt_and_hold_after_it(tmp_path: Path) -> None:
    async with driven(tmp_path, "two_turns") as d:
        first, second = d.prompts
        d.session.accept_inbound("m-1", first.text, meta=MessageMeta("plan", "claude-opus-4-1"))
        d.session.accept_inbound("m-2", second.text, meta=MessageMeta("plan", "claude-opus-4-1"))
        remote = RemoteSession(d.session, d.driver, PermissionBroker(Cuid2Ids()))
        with anyio.fail_after(BOUND):
            one, two = await remote.deliver_pending()
            await d.seen.turn_ends(2)
        assert remote.model == "claude-opus-4-1" and d.driver.permission_mode == "plan"
    # The second message asks for what holds already: nothing to set (Happy's app sends it each time).
    assert d.sdk.calls == [
        ("permission_mode", "plan"),
        ("model", "claude-opus-4-1"),
        ("query", one.uuid),
        ("query", two.uuid),
    ]


async def test_a_setting_claude_refuses_is_a_service_line_and_the_prompt_goes_anyway(tmp_path: Path) -> None:
    async with driven(tmp_path, "text", refuse="not allowed here") as d:
        [prompt] = d.prompts
        with anyio.fail_after(BOUND):
            await d.driver.send(prompt.text, prompt.uuid, MessageMeta("bypassPermissions"))
            await d.seen.turn_ends(2)  # the notice's own, then the prompt's
        assert d.driver.permission_mode is None  # as it was
    assert d.sdk.calls == [("query", prompt.uuid)]
    notice = ["turn-start", "service", "turn-end:completed"]  # a turn of its own, before the prompt's
    assert kinds(d.seen.envelopes) == [*notice, "text", "turn-start", "text", "turn-end:completed"]
    assert [e.ev.text for e in d.seen.envelopes if isinstance(e.ev, ServiceEv)] == [
        "Claude's permission mode could not be set to bypassPermissions (not allowed here): "
        "the message was sent without it."
    ]


# --- the two feeds racing: each record from the SDK and from the transcript ---------------------


@pytest.mark.parametrize("name", ["text", "bash_tool"])
async def test_the_sdk_first_then_the_transcript(tmp_path: Path, name: str) -> None:
    async with driven(tmp_path, name) as d:
        [prompt] = d.prompts
        with anyio.fail_after(BOUND):
            await d.driver.send(prompt.text, prompt.uuid)
            await d.seen.turn_ends()  # the whole reply came from the SDK
            d.transcript.write_through()  # then its copy on disk
            await d.stop()
        assert d.sdk.disconnected
    assert envelope_view(d.seen.envelopes) == envelope_view(replayed(scenario_dir(name)))


@pytest.mark.parametrize("name", ["text", "bash_tool"])
async def test_the_transcript_first_then_the_sdk(tmp_path: Path, name: str) -> None:
    expected = replayed(scenario_dir(name))
    async with driven(tmp_path, name, hold=True) as d:
        [prompt] = d.prompts
        with anyio.fail_after(BOUND):
            await d.driver.send(prompt.text, prompt.uuid)
            d.transcript.write_through()  # the reply on disk before the SDK says anything
            await d.seen.until(lambda seen: len(seen) == len(expected) - 1)  # all but the result's end
            d.sdk.release()
            await d.seen.turn_ends()
            await d.stop()
    assert envelope_view(d.seen.envelopes) == envelope_view(expected)


# --- an interrupt's grace ------------------------------------------------------------------------


async def test_an_interrupt_claude_answers_ends_the_tool_then_the_turn(tmp_path: Path) -> None:
    async with driven(tmp_path, "tool_interrupted") as d:
        prompt = d.prompts[0]
        with anyio.fail_after(BOUND):  # well within the grace (30 s)
            await d.driver.send(prompt.text, prompt.uuid)
            await d.seen.until(lambda seen: "tool-call-start" in seen)
            await d.driver.interrupt()
            assert not d.driver.busy and d.sdk.interrupts == 1
    ends = kinds(d.seen.envelopes)
    assert ends[-1] == "turn-end:cancelled"
    assert ends.index("tool-call-end:cancelled") < ends.index("turn-end:cancelled")


@pytest.mark.parametrize("on_interrupt", ["ignore", "hang"])
async def test_an_interrupt_claude_never_answers_is_ended_by_us_after_the_grace(
    tmp_path: Path, on_interrupt: OnInterrupt
) -> None:
    async with driven(tmp_path, "tool_interrupted", on_interrupt=on_interrupt, interrupt_grace=0.02) as d:
        prompt = d.prompts[0]
        with anyio.fail_after(BOUND):
            await d.driver.send(prompt.text, prompt.uuid)
            await d.seen.until(lambda seen: "tool-call-start" in seen)
            await d.driver.interrupt()
            assert not d.driver.busy and d.sdk.interrupts == 1
    ends = kinds(d.seen.envelopes)
    assert ends[-2:] == ["tool-call-end:cancelled", "turn-end:cancelled"]  # the tool's synthetic end first
