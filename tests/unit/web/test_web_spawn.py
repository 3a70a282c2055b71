"""The page's New session and Resume (web/spawning.py) over a fake spawner, in process: what the
form offers, the request passed on, every refusal as one line of text, the same guards as every
POST; and the browser notifications' events (web/notify.py), each told once."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from happy_launcher.control.attention import AttentionTracker
from happy_launcher.control.client import EnvelopeBytes
from happy_launcher.control.wire import Permission, PermissionRequested
from happy_launcher.errors import NoSuchSessionError
from happy_launcher.home.procs import this_process
from happy_launcher.protocol import EnvelopeFactory, SequentialIds, TextEv, TurnEndEv, TurnStartEv
from happy_launcher.protocol.events import TurnStatus
from happy_launcher.spawn.dirs import SpawnRefused, SpawnSettings, write_settings
from happy_launcher.spawn.spawner import NeedsCreation, SpawnRequest, Started
from happy_launcher.web.auth import Pairing, allowed_hosts
from happy_launcher.web.commands import Commands
from happy_launcher.web.devices import DeviceStore
from happy_launcher.web.hidden import HiddenSessions
from happy_launcher.web.notify import PageAttention
from happy_launcher.web.server import WebState, make_app
from tests.support.control import stored_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
BASE = "http://127.0.0.1:8000"
MODES = "'default', 'acceptEdits', 'plan' or 'bypassPermissions'"


@dataclass
class FakeStarter:
    refusal: Exception | None = None
    started: list[SpawnRequest] = field(default_factory=list)
    resumed: list[tuple[str, str | None, str | None]] = field(default_factory=list)

    async def start(self, request: SpawnRequest) -> Started:
        if self.refusal is not None:
            raise self.refusal
        self.started.append(request)
        return Started("hs-new", 4242, Path("/spawned/new.log"))

    async def resume(
        self, session_id: str, *, model: str | None = None, permission_mode: str | None = None
    ) -> Started:
        if self.refusal is not None:
            raise self.refusal
        self.resumed.append((session_id, model, permission_mode))
        return Started(session_id, 4243, Path("/spawned/again.log"))


@dataclass
class Page:
    client: httpx.AsyncClient
    starter: FakeStarter
    home: Path
    token: str

    async def post(self, path: str, body: object, *, origin: str = BASE) -> tuple[int, object]:
        headers = {"authorization": f"Bearer {self.token}", "origin": origin}
        answer = await self.client.post(path, json=body, headers=headers)
        return answer.status_code, answer.json()


@pytest.fixture
async def page(tmp_path: Path) -> AsyncIterator[Page]:
    home, user_home = tmp_path / "happy", tmp_path / "user"
    home.mkdir()
    user_home.mkdir()
    starter = FakeStarter()
    devices = DeviceStore(home, clock_ms=lambda: 0)
    state = WebState(
        home=home,
        devices=devices,
        pairing=Pairing(lambda: 0.0),
        hosts=allowed_hosts({"127.0.0.1"}, 8000),
        pair_url=lambda secret: secret,
        commands=Commands(),
        hidden=HiddenSessions(),
        starter=starter,
        user_home=user_home,
    )
    token = devices.add("test")[1]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=make_app(state)), base_url=BASE) as client:
        yield Page(client, starter, home, token)


async def test_the_form_offers_the_allowed_directories_home_first(page: Page, tmp_path: Path) -> None:
    headers = {"authorization": f"Bearer {page.token}"}
    offered = (await page.client.get("/api/spawn", headers=headers)).json()
    assert offered == {"directories": [str(tmp_path / "user")], "default": str(tmp_path / "user"), "limit": 8}
    write_settings(page.home, SpawnSettings((tmp_path / "a", tmp_path / "b"), limit=2))
    offered = (await page.client.get("/api/spawn", headers=headers)).json()
    assert offered["directories"] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert offered["default"] == str(tmp_path / "a")  # home is not allowed: the first one
    assert (await page.client.get("/api/spawn")).status_code == 401


async def test_a_new_session_goes_to_the_spawner_and_a_refusal_is_one_line(page: Page) -> None:
    body = {"directory": "/work/p", "prompt": "hello", "model": "opus", "permission_mode": "plan"}
    assert await page.post("/api/spawn", body) == (200, {"id": "hs-new"})
    wanted = SpawnRequest("/work/p", prompt="hello", model="opus", permission_mode="plan")
    assert page.starter.started == [wanted]
    empty = {"directory": "/work/p", "prompt": "", "model": ""}
    assert await page.post("/api/spawn", empty) == (200, {"id": "hs-new"})
    assert page.starter.started[-1] == SpawnRequest("/work/p")  # empty fields: Claude's defaults
    refusals = {
        "not allowed: /etc is outside the directories allowed here (/work)": SpawnRefused(
            "not allowed: /etc is outside the directories allowed here (/work)"
        ),
        "no such directory: /work/new": NeedsCreation("/work/new"),
        "limit reached: 8 sessions run (at most 8); stop one first": SpawnRefused(
            "limit reached: 8 sessions run (at most 8); stop one first"
        ),
    }
    for said, refusal in refusals.items():
        page.starter.refusal = refusal
        assert await page.post("/api/spawn", {"directory": "/work/new"}) == (409, {"error": said})
    status, answer = await page.post("/api/spawn", {"directory": "/work/p", "permission_mode": "yolo"})
    assert (status, answer) == (400, {"error": f"bad request: permission_mode: Input should be {MODES}"})
    page.starter.refusal = None
    assert (await page.post("/api/spawn", body, origin="http://evil.example"))[0] == 403
    assert (await page.client.post("/api/spawn", json=body, headers={"origin": BASE})).status_code == 401
    assert len(page.starter.started) == 2


async def test_only_an_ended_session_is_resumed(page: Page) -> None:
    stored_session(page.home, "hs-old", prompt="yesterday's work", at=1_700_000_000_000)
    stored_session(page.home, "hs-run", prompt="going", at=1_700_000_000_000, owner=this_process(os.getpid()))
    assert await page.post("/api/sessions/hs-old/resume", {"model": "haiku"}) == (200, {"id": "hs-old"})
    assert page.starter.resumed == [("hs-old", "haiku", None)]
    status, answer = await page.post("/api/sessions/hs-run/resume", {})
    running = "session hs-run is running: only an ended session can be resumed"
    assert (status, answer) == (409, {"error": running})
    assert (await page.post("/api/sessions/hs-nope/resume", {}))[0] == 404
    assert (await page.post("/api/sessions/hs-old/resume", {}, origin="http://evil.example"))[0] == 403
    page.starter.refusal = NoSuchSessionError("hs-old has no Claude session to resume")
    assert await page.post("/api/sessions/hs-old/resume", {}) == (
        404,
        {"error": "hs-old has no Claude session to resume"},
    )
    assert page.starter.resumed == [("hs-old", "haiku", None)]


MAKE = EnvelopeFactory(SequentialIds("n"))


def turn(turn_id: str, start_ms: int, end_ms: int, status: TurnStatus) -> list[EnvelopeBytes]:
    made = [
        MAKE.agent(TurnStartEv(), turn=turn_id, time=start_ms),
        MAKE.agent(TextEv(text="working"), turn=turn_id, time=(start_ms + end_ms) // 2),
        MAKE.agent(TurnEndEv(status=status), turn=turn_id, time=end_ms),
    ]
    return [EnvelopeBytes(seq, envelope.to_json()) for seq, envelope in enumerate(made)]


async def test_each_event_is_told_once_and_history_is_not() -> None:
    since = 1_000_000
    told = PageAttention(AttentionTracker("hs-1", title="project"), since_ms=since, titled=False)
    told.item(EnvelopeBytes(1, MAKE.user_text("fix the tests\nplease", time=500).to_json()))
    history = [*turn("told0", 1000, 2000, "failed"), *turn("told1", 3000, 60_000, "completed")]
    assert [told.item(item) for item in history] == [None] * 6  # before the page looked
    asked = PermissionRequested(request=Permission(id="r1", tool="Bash", input={}, title="Run ls"))
    first = told.item(asked)
    assert first is not None
    assert (first.kind, first.key, first.body) == ("permission", "r1", "fix the tests …")
    assert told.item(asked) is None  # again at a reconnection: not told again
    # A turn under way when the page opened is timed from its start; a short one is not told.
    long_turn = turn("told2", since - 15_000, since + 6_000, "completed")
    short = turn("told3", since + 7_000, since + 8_000, "completed")
    failed = turn("told4", since + 9_000, since + 9_500, "failed")
    said = [a for item in [*long_turn, *short, *failed] if (a := told.item(item)) is not None]
    assert [(a.kind, a.key) for a in said] == [("done", "told2"), ("failed", "told4")]
