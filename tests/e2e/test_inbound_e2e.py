"""Inbound messages exactly once across restarts of happy (issue 9), with the real bundled Claude
driven through the real Agent SDK against the suite's fake Messages API.

A message is stored and acknowledged; happy goes away before (a) sending it, or (b) after Claude
took it but before the session committed it; the next happy on that Claude session delivers it
exactly once, and no envelope is stored twice, none lost (c).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.remote.launcher import connect
from happy_launcher.remote.remote_session import RemoteSession
from happy_launcher.session.core import Session
from happy_launcher.store.sessions import SessionStore
from tests.e2e.test_remote_e2e import assert_live_equals_replay, claude_options, script, stored, turn
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.timeout(120)]
__all__ = ["claude_options", "script"]  # fixtures: remote mode's rules and settings

AWAY = "message while happy was away"


@dataclass(frozen=True)
class Flags:
    passthrough: tuple[str, ...] = ()
    prompt_positions: tuple[int, ...] = ()
    user_settings: str | None = None


@asynccontextmanager
async def remote(
    session: Session, cenv: ClaudeEnv, claude_id: str, *, resume: bool
) -> AsyncIterator[RemoteSession]:
    env = {**cenv.env, "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    async with connect(
        session,
        Flags(),
        binary=cenv.binary,
        cwd=cenv.cwd,
        env=env,
        claude_session_id=claude_id,
        resume=resume,
    ) as r:
        yield r


async def first_run(home: Path, cenv: ClaudeEnv) -> tuple[str, str, str]:
    """A turn, then a message accepted and not sent: happy goes away. (happy id, Claude id, uuid)"""
    with Session(home, cenv.cwd) as session:
        async with remote(session, cenv, "00000000-0000-4000-8000-00000000c1a0", resume=False) as r:
            await turn(r, "hello first")
            accepted = session.accept_inbound("m1", AWAY)
            assert not accepted.duplicate and session.accept_inbound("m1", AWAY).duplicate
            [prompt] = session.pending_prompts()
            assert r.has_pending()
            happy_id, claude_id = r.happy_session_id, r.claude_session_id
    return happy_id, claude_id, prompt.uuid


def asked(fake: FakeAnthropic, text: str) -> int:
    return sum(1 for req in fake.requests if req.last_user_text == text)


def assert_nothing_twice_nothing_lost(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    assert after[: len(before)] == before  # nothing lost, nothing rewritten
    assert len({e["id"] for e in after}) == len(after)
    users = Counter(e["ev"].get("text") for e in after if e["role"] == "user")
    assert users[AWAY] == 1 and all(n == 1 for n in users.values())
    claude_uuids = [(e.get("claudeUuid"), e["ev"]["t"]) for e in after if e.get("claudeUuid")]
    assert len(set(claude_uuids)) == len(claude_uuids)


async def test_a_message_accepted_but_never_sent_is_delivered_once_by_the_next_start(
    cenv: ClaudeEnv, home: Path, fake: FakeAnthropic
) -> None:
    happy_id, claude_id, prompt_uuid = await first_run(home, cenv)
    before = stored(home, happy_id)
    with Session(home, cenv.cwd) as session:
        async with remote(session, cenv, claude_id, resume=True) as r:
            assert r.happy_session_id == happy_id and r.has_pending()
            with anyio.fail_after(60):
                [sent] = await r.deliver_pending()
                await r.wait_idle()
                assert await r.deliver_pending() == []  # delivered: never again
            assert sent.uuid == prompt_uuid and not r.has_pending()
    assert asked(fake, AWAY) == 1
    after = stored(home, happy_id)
    assert_nothing_twice_nothing_lost(before, after)
    assert [e["ev"]["t"] for e in after[len(before) :]][-1] == "turn-end"
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


async def test_a_message_claude_took_before_happy_went_away_is_marked_not_sent_again(
    cenv: ClaudeEnv, home: Path, fake: FakeAnthropic, tmp_path: Path
) -> None:
    happy_id, claude_id, prompt_uuid = await first_run(home, cenv)
    before = stored(home, happy_id)
    # Claude takes the prompt (and answers it) while this happy's store never hears of it: as
    # when happy dies between sending and committing. Another store stands in for that happy.
    with Session(tmp_path / "elsewhere", cenv.cwd) as other:
        async with remote(other, cenv, claude_id, resume=True) as r:
            with anyio.fail_after(45):
                await r.submit(AWAY, prompt_uuid)
                await r.wait_idle()
    with SessionStore.open(home) as store:
        assert len(store.pending_inbound(happy_id)) == 1
    with Session(home, cenv.cwd) as session:
        async with remote(session, cenv, claude_id, resume=True) as r:
            assert not r.has_pending()  # the transcript read on connecting marked it
            assert await r.deliver_pending() == []
            later = await turn(r, "hello after")
    assert asked(fake, AWAY) == 1
    after = stored(home, happy_id)
    assert_nothing_twice_nothing_lost(before, after)
    texts = [e["ev"].get("text") for e in after[len(before) :] if e["ev"]["t"] == "text"]
    assert texts[:2] == [AWAY, "Echo: " + AWAY]  # its turn, mirrored from the transcript, once
    assert [e.ev.t for e in later][-1] == "turn-end"
    assert_live_equals_replay(cenv, home, happy_id, claude_id)


async def test_a_resumed_session_reads_on_from_where_it_began_not_from_claudes_older_history(
    cenv: ClaudeEnv, home: Path, tmp_path: Path
) -> None:
    claude_id = "00000000-0000-4000-8000-00000000c1a1"
    with Session(tmp_path / "elsewhere", cenv.cwd) as other:  # Claude's history from before happy
        async with remote(other, cenv, claude_id, resume=False) as r:
            await turn(r, "older than happy")
    for text in ("hello happy", "hello again"):  # the second start adopts the first's session
        with Session(home, cenv.cwd) as session:
            async with remote(session, cenv, claude_id, resume=True) as r:
                await turn(r, text)
                happy_id = r.happy_session_id
    texts = [e["ev"].get("text") for e in stored(home, happy_id) if e["ev"]["t"] == "text"]
    assert texts == ["hello happy", "Echo: hello happy", "hello again", "Echo: hello again"]
