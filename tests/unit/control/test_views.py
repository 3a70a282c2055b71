"""The sessions as the store alone tells them (`from_store`: `happy sessions`, `happy watch` of an
ended session, the page's list) are exactly what asking every live launcher gives (`asked`)
while each noted its front end there, so `discover` then asks none; they are not trusted while
one did not (an older happy, a session not named yet)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from happy_launcher.control.discovery import asked, discover
from happy_launcher.control.fake import FakeController
from happy_launcher.control.views import from_store
from happy_launcher.home.procs import ProcessId, this_process
from happy_launcher.session.ports import SessionFacts
from happy_launcher.store.sessions import SessionStore
from tests.support.control import facts, running

pytestmark = pytest.mark.anyio
DEAD_PID = 4_194_304 + 7  # above the kernel's pid_max


class Hellos(FakeController):
    """Counts the times it was asked what it is (a `hello`)."""

    hellos = 0

    def facts(self) -> SessionFacts:
        self.hellos += 1
        return super().facts()


def stored(home: Path) -> None:
    with SessionStore.open(home) as store:
        store.create_session("hs-done", cwd="/a", started_at=1, status="completed")
        store.create_session("hs-gone", cwd="/b", started_at=3, owner=ProcessId(DEAD_PID, None))
        store.create_session("hs-mid", cwd="/a", started_at=2, status="failed")


async def test_without_a_live_launcher_the_store_lists_what_asking_the_launchers_does(tmp_path: Path) -> None:
    stored(tmp_path)
    listed = from_store(tmp_path)
    assert listed is not None and listed == await asked(tmp_path)
    assert [(v.happy_id, v.state) for v in listed] == [
        ("hs-gone", "ended"),  # its launcher is gone, whatever the store still says
        ("hs-mid", "failed"),
        ("hs-done", "completed"),
    ]


async def test_a_launcher_that_noted_its_front_end_is_listed_from_the_store(tmp_path: Path) -> None:
    stored(tmp_path)
    with SessionStore.open(tmp_path) as store:
        store.create_session("hs-alpha", cwd="/work/project", started_at=4, owner=this_process(os.getpid()))
        store.note_front("hs-alpha", "remote", terminal=False)
    controller = Hellos(facts(claude_session_id=None, mode="remote", terminal=False))
    async with running(controller, tmp_path):
        controller.hellos = 0  # the server's start read its pid
        with anyio.fail_after(10):
            listed = from_store(tmp_path)
            assert listed is not None and listed == await discover(tmp_path)
            assert controller.hellos == 0  # the store said it all
            assert listed == await asked(tmp_path)
            assert controller.hellos == 1
    first = listed[0]
    assert (first.happy_id, first.state, first.mode, first.terminal) == (
        "hs-alpha",
        "running",
        "remote",
        False,
    )


async def test_a_live_launcher_that_did_not_note_its_front_is_asked(tmp_path: Path) -> None:
    stored(tmp_path)
    with SessionStore.open(tmp_path) as store:
        store.create_session("hs-alpha", cwd="/work/project", started_at=4, owner=this_process(os.getpid()))
    controller = Hellos(facts(mode="remote"))
    async with running(controller, tmp_path):
        controller.hellos = 0  # the server's start read its pid
        with anyio.fail_after(10):
            assert from_store(tmp_path) is None
            views = await discover(tmp_path)
    assert controller.hellos == 1
    first = views[0]
    assert (first.happy_id, first.state, first.mode) == ("hs-alpha", "running", "remote")
