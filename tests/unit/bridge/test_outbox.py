"""Sessions out, one session at a time, over the in-memory Happy server (bridge/link/fake_api.py) and
a fake sleeper: links made once and kept with their key, envelopes posted in seq order in batches
of at most 100 with localId = the envelope's id, the mark advanced only after the server's
acknowledgement, and outages and restarts that lose nothing and post nothing twice."""

from __future__ import annotations

import logging
import secrets
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from happy_launcher.bridge.keys.cipher import SessionCipher
from happy_launcher.bridge.keys.credentials import Credentials
from happy_launcher.bridge.keys.crypto import b64, content_keypair, unb64, unwrap_data_key, wrap_data_key
from happy_launcher.bridge.link.api import Posted
from happy_launcher.bridge.link.fake_api import FakeHappyApi
from happy_launcher.bridge.link.retry import Backoff, Retry, ServerHealth
from happy_launcher.bridge.out.links import Linked, LinkMaker
from happy_launcher.bridge.out.metadata import MachineFacts, session_metadata
from happy_launcher.bridge.out.outbox import Poster, envelope_stream, feed_stored
from happy_launcher.errors import HappyServerError
from happy_launcher.store.happy_links import PENDING, HappyLink
from happy_launcher.store.sessions import DB_NAME, SessionStore
from happy_launcher.version import __version__
from tests.support.control import Envelopes

pytestmark = pytest.mark.anyio
SERVER = "http://fake-happy"
SECRET = secrets.token_bytes(32)
DATA_KEY = Credentials(
    token="tok", variant="dataKey", content_public=content_keypair(SECRET).public, machine_key=b"m" * 32
)
LEGACY = Credentials(token="tok", variant="legacy", secret=SECRET)
MACHINE = MachineFacts("machine-1", "host-1", "linux", "/home/u", "/home/u/.happy")
META = {"path": "/w", "host": "host-1"}


class FakeSleeper:
    """Records each wait; `each` runs at every wait (the test looks at the store mid-outage)."""

    def __init__(self, each: Callable[[], None] | None = None) -> None:
        self.delays: list[float] = []
        self.each = each

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        if self.each is not None:
            self.each()
        await anyio.lowlevel.checkpoint()


def make_store(home: Path, count: int, sid: str = "s1") -> tuple[SessionStore, list[bytes]]:
    store = SessionStore.open(home)
    store.create_session(sid, cwd="/w", started_at=1)
    store.append_envelopes(sid, Envelopes().make(count))
    return store, [body for _, body in store.raw_envelopes(sid)]


def retry(sleeper: FakeSleeper | None = None) -> Retry:
    return Retry(sleeper or FakeSleeper(), Backoff(first=0.25, cap=2.0), ServerHealth())


async def send_out(store: SessionStore, api: Any, r: Retry, credentials: Credentials = DATA_KEY) -> Linked:
    """What one session's task does for an ended session: link it, post from the mark."""
    made = await LinkMaker(store, SERVER, credentials, api, r).ensure("s1", META)
    assert made is not None
    linked, sent = made
    send, receive = envelope_stream()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(Poster(store, SERVER, api, r).run, linked, sent, receive)
            tg.start_soon(feed_stored, store, "s1", sent, send)
    return linked


def on_server(api: FakeHappyApi, linked: Linked) -> list[tuple[str | None, Any]]:
    """(localId, the envelope) of every message of the session on the server, in seq order."""
    rows = api.by_id(linked.happy_id).rows
    opened = [linked.cipher.open(row.content) for row in rows]
    assert all(o["role"] == "session" and o["meta"] == {"sentFrom": "cli"} for o in opened)
    return [(row.local_id, o["content"]) for row, o in zip(rows, opened, strict=True)]


def stored(bodies: Sequence[bytes]) -> list[tuple[str | None, Any]]:
    return [(orjson.loads(b)["id"], orjson.loads(b)) for b in bodies]


async def test_envelopes_go_in_seq_order_in_batches_of_at_most_100_with_their_ids(tmp_path: Path) -> None:
    store, bodies = make_store(tmp_path, 250)
    api = FakeHappyApi()
    linked = await send_out(store, api, retry())
    assert [len(batch) for batch in api.posted_batches] == [100, 100, 50]
    assert on_server(api, linked) == stored(bodies)
    assert store.unsent_sessions(SERVER) == []
    link = store.happy_link("s1", SERVER)
    assert link is not None and link.sent_seq == 250


async def test_an_outage_loses_nothing_posts_nothing_twice_and_marks_nothing(tmp_path: Path) -> None:
    store, bodies = make_store(tmp_path, 150)
    marks: list[int] = []

    def mark() -> None:
        link = store.happy_link("s1", SERVER)
        marks.append(-1 if link is None else link.sent_seq)

    api, sleeper = FakeHappyApi(), FakeSleeper(mark)
    api.fail_next(6, only="post_messages")
    linked = await send_out(store, api, retry(sleeper))
    assert sleeper.delays == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]  # doubling, capped
    assert marks == [0] * 6  # no mark while the server did not acknowledge
    assert on_server(api, linked) == stored(bodies)
    assert [len(batch) for batch in api.posted_batches] == [100, 50]


class LostAnswers(FakeHappyApi):
    """The server takes the first `lose` posts, but their answers never arrive (a kill -9 or a
    dropped connection right after the post)."""

    def __init__(self, lose: int) -> None:
        super().__init__()
        self.lose = lose

    async def post_messages(self, happy_id: str, messages: Sequence[tuple[str, str]]) -> list[Posted]:
        answer = await super().post_messages(happy_id, messages)
        if self.lose > 0:
            self.lose -= 1
            raise HappyServerError("the answer was lost")
        return answer


async def test_the_create_is_tried_until_the_server_answers(tmp_path: Path) -> None:
    store, bodies = make_store(tmp_path, 2)
    api, sleeper = FakeHappyApi(), FakeSleeper()
    api.fail_next(3)
    health = ServerHealth()
    r = Retry(sleeper, Backoff(first=1.0, cap=60.0), health)
    linked = await send_out(store, api, r)
    assert sleeper.delays == [1.0, 2.0, 4.0]
    assert api.calls == ["create_session"] * 4 + ["post_messages"]
    assert on_server(api, linked) == stored(bodies)
    assert health == ServerHealth()  # answering again


async def test_a_batch_posted_but_not_marked_is_posted_again_harmlessly(tmp_path: Path) -> None:
    store, bodies = make_store(tmp_path, 120)
    api = LostAnswers(lose=1)
    linked = await send_out(store, api, retry())
    assert [len(batch) for batch in api.posted_batches] == [100, 100, 20]  # the first one twice
    assert on_server(api, linked) == stored(bodies)  # yet each envelope once, in order


async def test_a_restart_resumes_from_the_mark_with_the_same_link_and_key(tmp_path: Path) -> None:
    store, bodies = make_store(tmp_path, 120)
    api = FakeHappyApi()
    first = await send_out(store, api, retry())
    store.close()
    # Killed after the server took the last batch, before the mark: the mark is still 100.
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("UPDATE happy_links SET sent_seq = 100")
    store = SessionStore.open(tmp_path)
    api.posted_batches.clear()
    again = await send_out(store, api, retry())
    assert again == first  # the same Happy session, the same key
    assert api.posted_batches == [[orjson.loads(b)["id"] for b in bodies[100:]]]
    assert on_server(api, again) == stored(bodies)  # nothing twice
    link = store.happy_link("s1", SERVER)
    assert link is not None and link.sent_seq == 120
    (remote,) = [s.remote for s in api.sessions.values()]
    assert remote.dataEncryptionKey is not None
    assert unwrap_data_key(unb64(remote.dataEncryptionKey), content_keypair(SECRET).secret) == link.key


async def test_a_link_whose_create_went_unanswered_keeps_its_key(tmp_path: Path) -> None:
    """Killed between the create and saving its answer: the key was kept first, so the session
    the server made with it is ours."""
    store, _ = make_store(tmp_path, 1)
    key = secrets.token_bytes(32)
    store.save_happy_link(HappyLink("s1", SERVER, PENDING, "dataKey", key))
    api = FakeHappyApi()
    cipher = SessionCipher("dataKey", key)
    wrapped = b64(wrap_data_key(key, DATA_KEY.content_public))
    remote = await api.create_session("s1", cipher.seal(META), None, wrapped)
    linked = await send_out(store, api, retry())
    assert (linked.happy_id, linked.cipher) == (remote.id, cipher)


async def test_a_session_the_server_holds_under_a_lost_key_is_skipped_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, _ = make_store(tmp_path, 1)
    api = FakeHappyApi()
    other = SessionCipher("dataKey", secrets.token_bytes(32))
    await api.create_session(
        "s1", other.seal(META), None, b64(wrap_data_key(other.key, DATA_KEY.content_public))
    )
    with caplog.at_level(logging.WARNING, "happy_launcher.bridge"):
        made = await LinkMaker(store, SERVER, DATA_KEY, api, retry()).ensure("s1", META)
    assert made is None
    assert [r.message for r in caplog.records] == [
        "session s1: Happy's server already has it under a key this machine no longer holds "
        "(the store was lost); it is not sent again"
    ]
    assert api.posted_batches == []


async def test_a_legacy_account_reads_what_the_server_holds(tmp_path: Path) -> None:
    store, bodies = make_store(tmp_path, 3)
    api = FakeHappyApi()
    legacy = SessionCipher("legacy", SECRET)
    await api.create_session("s1", legacy.seal(META), None, None)  # made before the store was lost
    linked = await send_out(store, api, retry(), LEGACY)
    assert linked.cipher == legacy
    assert on_server(api, linked) == stored(bodies)
    link = store.happy_link("s1", SERVER)
    assert link is not None and (link.variant, link.key) == ("legacy", b"")  # the secret stays in access.key


async def test_the_metadata_says_what_the_app_shows(tmp_path: Path) -> None:
    store, _ = make_store(tmp_path, 1)
    api = FakeHappyApi()
    metadata = session_metadata(
        MACHINE, cwd="/w/p", claude_session_id="c-1", title="Fix the bug", running=True, host_pid=42, now_ms=7
    )
    made = await LinkMaker(store, SERVER, DATA_KEY, api, retry()).ensure("s1", metadata)
    assert made is not None
    (remote,) = [s.remote for s in api.sessions.values()]
    assert made[0].cipher.open(remote.metadata) == {
        "path": "/w/p",
        "host": "host-1",
        "os": "linux",
        "version": __version__,
        "flavor": "claude",
        "machineId": "machine-1",
        "homeDir": "/home/u",
        "happyHomeDir": "/home/u/.happy",
        "startedBy": "terminal",
        "lifecycleState": "running",
        "lifecycleStateSince": 7,
        "claudeSessionId": "c-1",
        "name": "Fix the bug",
        "summary": {"text": "Fix the bug", "updatedAt": 7},
        "hostPid": 42,
    }
    ended = session_metadata(
        MACHINE, cwd="/w", claude_session_id=None, title=None, running=False, host_pid=42, now_ms=9
    )
    assert ended["lifecycleState"] == "archived"
    assert not {"name", "summary", "hostPid", "claudeSessionId"} & ended.keys()
