"""The follow loop every face uses (control/follow.py), over the fake controller's real socket: a
drop mid-follow is caught up on a new connection with no gap and no duplicate, and what the
session committed as it ended comes from the store."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from happy_launcher.control import history as control_history
from happy_launcher.control.client import EnvelopeBytes
from happy_launcher.control.fake import FakeController
from happy_launcher.control.follow import Connected, Followed, follow
from happy_launcher.control.link import ServerLimits
from happy_launcher.control.views import SessionView
from happy_launcher.control.wire import PermissionRequested, PermissionSettled
from happy_launcher.session.ports import PermissionAnswer, PermissionRequest
from happy_launcher.store.sessions import SessionStore
from tests.support.control import Envelopes, facts, running

pytestmark = pytest.mark.anyio
BOUND = 10.0  # seconds any of these may take, at most


def view(socket: Path | None) -> SessionView:
    state = "running" if socket is not None else "completed"
    return SessionView("hs-alpha", None, state, "local", "/work/project", None, 0, None, socket)


BURST = 1000  # envelopes of 1 KB: beyond a Unix socket's buffers (~200 KB each way) and the outbox


def seqs(items: list[Followed]) -> list[int]:
    return [item.seq for item in items if isinstance(item, EnvelopeBytes)]


async def test_a_drop_mid_follow_is_caught_up_with_no_gap_and_no_duplicate(tmp_path: Path) -> None:
    controller, envelopes = FakeController(facts()), Envelopes()
    controller.commit(envelopes.make(3))
    got: list[Followed] = []
    async with running(controller, tmp_path, limits=ServerLimits(outbox=16 << 10)) as path:
        with anyio.fail_after(BOUND):
            async with aclosing(follow(tmp_path, view(path), 0)) as followed:
                async for item in followed:
                    got.append(item)
                    if isinstance(item, EnvelopeBytes) and item.seq == 3:
                        # One batch over what the socket takes at once (the rest is queued) and the
                        # outbox limit while we do not read: the server drops us.
                        controller.commit(envelopes.make(BURST, size=1024))
                        controller.request_permission(PermissionRequest("p1", "Bash", {}, "Run ls"))
                    if isinstance(item, EnvelopeBytes) and item.seq == 3 + BURST:
                        controller.answer("p1", True, None)
                    if isinstance(item, PermissionSettled):
                        break
    assert seqs(got) == list(range(1, 4 + BURST))
    assert sum(isinstance(item, Connected) for item in got) == 2  # subscribed again, once
    requested = [item.request.request() for item in got if isinstance(item, PermissionRequested)]
    assert requested == [PermissionRequest("p1", "Bash", {}, "Run ls")]
    assert got[-1] == PermissionSettled.of("p1", PermissionAnswer(True))


async def test_the_rest_comes_from_the_store_once_the_session_ends(tmp_path: Path) -> None:
    controller, envelopes = FakeController(facts()), Envelopes()
    made = envelopes.make(5)
    controller.commit(made[:3])  # what the socket serves; the store has all five
    store = SessionStore.open(tmp_path)
    store.create_session("hs-alpha", cwd="/work/project", started_at=0)
    store.append_envelopes("hs-alpha", made)
    store.close()
    got: list[Followed] = []
    third = anyio.Event()

    async def follow_it(socket: Path) -> None:
        async with aclosing(follow(tmp_path, view(socket), 1)) as followed:
            async for item in followed:
                got.append(item)
                if isinstance(item, EnvelopeBytes) and item.seq == 3:
                    third.set()

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg, running(controller, tmp_path) as path:
            tg.start_soon(follow_it, path)
            await third.wait()
            # Leaving the block ends the session (its server goes): the follow finishes from the store.
    assert seqs(got) == [2, 3, 4, 5]
    stored = [item.body for item in got if isinstance(item, EnvelopeBytes)][2:]
    assert stored == [envelope.to_json() for envelope in made[3:]]


async def test_an_ended_session_is_its_history_from_the_store(tmp_path: Path) -> None:
    made = Envelopes().make(2)
    store = SessionStore.open(tmp_path)
    store.create_session("hs-alpha", cwd="/work/project", started_at=0)
    store.append_envelopes("hs-alpha", made)
    store.close()
    with anyio.fail_after(BOUND):
        async with aclosing(follow(tmp_path, view(None), 0)) as followed:
            got = [item async for item in followed]
    assert seqs(got) == [1, 2]


@pytest.mark.parametrize("count", [6, 7])  # the last page full, or not
async def test_an_ended_session_is_read_in_pages_with_nothing_lost_or_doubled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    monkeypatch.setattr(control_history, "FIRST_PAGE", 2)
    monkeypatch.setattr(control_history, "STORE_PAGE", 3)
    made = Envelopes().make(count)
    with SessionStore.open(tmp_path) as store:
        store.create_session("hs-alpha", cwd="/work/project", started_at=0)
        store.append_envelopes("hs-alpha", made)
    with anyio.fail_after(BOUND):
        async with aclosing(follow(tmp_path, view(None), 1)) as followed:
            got = [item async for item in followed]
    assert seqs(got) == list(range(2, count + 1))
    assert [item.body for item in got if isinstance(item, EnvelopeBytes)] == [e.to_json() for e in made[1:]]
