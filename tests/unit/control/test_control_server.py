"""The control socket over a FakeController: every message, errors, and clients that misbehave."""

from __future__ import annotations

import os
import threading
from functools import partial
from pathlib import Path

import anyio
import orjson
import pytest

from happy_launcher.control import link as control_link
from happy_launcher.control import server as control_server
from happy_launcher.control import subscription as control_subscription
from happy_launcher.control.client import ControlClient, EnvelopeBytes, connect
from happy_launcher.control.fake import FakeController
from happy_launcher.control.link import MAX_REQUEST_LINE, ServerLimits
from happy_launcher.control.server import serve
from happy_launcher.control.wire import (
    PROTOCOL_VERSION,
    Dropped,
    PermissionRequested,
    PermissionSettled,
)
from happy_launcher.errors import ControlProtocolError, RequestRefusedError, SessionEndedError, UsageError
from happy_launcher.runner.controller import SessionController
from happy_launcher.session.launcher import ClaudeStart, Run
from happy_launcher.session.ports import MessageMeta, PermissionRequest
from tests.support.control import Envelopes, facts, running

pytestmark = pytest.mark.anyio


async def envelopes_until(client: ControlClient, last: int) -> list[int]:
    """The seqs of the envelope events received up to (and including) seq `last`."""
    seqs: list[int] = []
    async for event in client.events():
        if isinstance(event, EnvelopeBytes):
            seqs.append(event.seq)
            if event.seq >= last:
                break
    return seqs


async def raw_exchange(path: Path, payload: bytes, replies: int) -> list[dict[str, object]]:
    """Send raw bytes and read `replies` lines back."""
    link = await control_link.connect(str(path))
    with link.socket:
        await link.send(payload)
        buffered = b""
        while buffered.count(b"\n") < replies:
            buffered += await link.receive()
    return [orjson.loads(line) for line in buffered.splitlines()]


async def test_hello_and_status_describe_the_session(tmp_path: Path) -> None:
    controller = FakeController(facts())
    request = PermissionRequest(id="perm-1", tool="Bash", input={"command": "ls"}, title="Run ls")
    controller.request_permission(request)
    async with running(controller, tmp_path) as path, connect(path) as client:
        hello = await client.hello()
        assert hello.version == PROTOCOL_VERSION and hello.session.happy_session_id == "hs-alpha"
        assert hello.session.pid == os.getpid() and hello.session.mode == "local"
        status = await client.status()
        assert [p.id for p in status.pending] == ["perm-1"] and status.pending[0].input == {"command": "ls"}


async def test_an_unknown_protocol_version_is_an_error_and_the_connection_stays(tmp_path: Path) -> None:
    async with running(FakeController(facts()), tmp_path) as path:
        lines = b'{"type":"hello","id":"a","versions":[7]}\n{"type":"hello","id":"b","versions":[7,1]}\n'
        first, second = await raw_exchange(path, lines, 2)
    assert first["code"] == "unsupported-version" and first["id"] == "a"
    assert second["type"] == "hello" and second["version"] == 1 and second["id"] == "b"


async def test_send_is_idempotent_on_the_message_id(tmp_path: Path) -> None:
    controller = FakeController(facts())
    async with running(controller, tmp_path) as path, connect(path) as client:
        first = await client.send("m-1", "hello")
        again = await client.send("m-1", "hello")
        other = await client.send("m-2", "more")
    assert (first.message_seq, first.duplicate) == (1, False)
    assert (again.message_seq, again.duplicate) == (1, True)
    assert other.message_seq == 2 and controller.sent["m-2"][1] == "more"


async def test_a_permission_mode_and_a_model_reach_the_session_happys_names_mapped(tmp_path: Path) -> None:
    controller = FakeController(facts())
    async with running(controller, tmp_path) as path, connect(path) as client:
        await client.send("m-1", "go", permission_mode="yolo", model="claude-opus-4-1")
        await client.send("m-2", "plan it", "inject", permission_mode="plan")
        await client.send("m-3", "plain")
    assert controller.metas == {
        "m-1": MessageMeta("bypassPermissions", "claude-opus-4-1"),
        "m-2": MessageMeta("plan", None),
        "m-3": MessageMeta(),
    }


async def test_an_unknown_permission_mode_is_refused_in_one_line(tmp_path: Path) -> None:
    controller = FakeController(facts())
    line = b'{"type":"send","id":"s","message_id":"m","text":"hi","permission_mode":"always"}\n'
    async with running(controller, tmp_path) as path:
        [reply] = await raw_exchange(path, line, 1)
        async with connect(path) as client:
            with pytest.raises(UsageError, match=r"^permission mode 'always' is not one of default, "):
                await client.send("m", "hi", permission_mode="always")
            with pytest.raises(UsageError, match="model name must be 1 to 200"):
                await client.send("m", "hi", model="x" * 201)
    assert (reply["code"], reply["id"]) == ("bad-request", "s") and "\n" not in str(reply["message"])
    assert str(reply["message"]).startswith("send.permission_mode: Input should be 'default', ")
    assert not controller.sent


async def test_two_clients_sending_at_once_both_get_their_answers(tmp_path: Path) -> None:
    controller = FakeController(facts())
    results: dict[str, list[tuple[int, bool]]] = {"a": [], "b": []}

    async def sender(name: str, path: Path) -> None:
        async with connect(path) as client:
            for n in range(50):
                accepted = await client.send(f"{name}-{n}", f"text {n}")
                shared = await client.send(f"shared-{n}", "same")  # both clients send this one
                results[name].append((accepted.message_seq, shared.duplicate))

    async with running(controller, tmp_path) as path, anyio.create_task_group() as tg:
        tg.start_soon(sender, "a", path)
        tg.start_soon(sender, "b", path)
    assert len(controller.sent) == 150  # 50 + 50 own, 50 shared stored once
    own = [seq for name in "ab" for seq, _ in results[name]]
    assert len(set(own)) == 100
    duplicates = [dup for name in "ab" for _, dup in results[name]]
    assert duplicates.count(True) == 50 and duplicates.count(False) == 50


async def test_switch_abort_and_a_refusal(tmp_path: Path) -> None:
    controller = FakeController(facts(busy=True))
    async with running(controller, tmp_path) as path, connect(path) as client:
        assert (await client.switch("remote")).outcome == "switched"
        assert (await client.hello()).session.mode == "remote"
        assert (await client.switch("remote")).outcome == "already-there"
        assert (await client.abort()).outcome == "aborted"
        assert (await client.abort()).outcome == "no-turn"
        controller.refuse_switch = "Claude is showing a dialog: answer it first"
        with pytest.raises(RequestRefusedError, match="answer it first"):
            await client.switch("local")
        assert (await client.status()).session.mode == "remote"  # the connection is still fine
    assert controller.aborts == 2


async def test_permission_requests_reach_subscribers_and_answers_settle_them(tmp_path: Path) -> None:
    controller = FakeController(facts())
    open_one = PermissionRequest(id="perm-1", tool="Bash", input={"command": "ls"}, title="Run ls")
    controller.request_permission(open_one)
    async with running(controller, tmp_path) as path, connect(path) as watcher, connect(path) as answerer:
        await watcher.subscribe(None)
        events = watcher.events()
        first = await anext(events)
        assert isinstance(first, PermissionRequested) and first.request.id == "perm-1"  # open ones first
        controller.request_permission(PermissionRequest(id="perm-2", tool="Write", input={}, title="Write x"))
        second = await anext(events)
        assert isinstance(second, PermissionRequested) and second.request.title == "Write x"
        await answerer.answer("perm-2", False, "not now")
        settled = await anext(events)
        assert isinstance(settled, PermissionSettled) and (settled.request_id, settled.outcome) == (
            "perm-2",
            "denied",
        )
        with pytest.raises(RequestRefusedError, match="no pending permission request perm-2"):
            await answerer.answer("perm-2", True)
    assert controller.answers == [("perm-2", False, "not now")]


async def test_a_request_open_before_the_subscription_comes_once_from_the_real_controller(
    tmp_path: Path,
) -> None:
    ref = Run(tmp_path / "home", tmp_path)
    controller = SessionController(
        ref, mode="remote", pid=os.getpid(), transcript=lambda _: tmp_path / "t.jsonl", clock=lambda: 0
    )
    open_one = ref.permissions.open("Bash", {"command": "ls"})
    async with anyio.create_task_group() as tg:
        path = await tg.start(partial(serve, controller, tmp_path))
        async with connect(path) as watcher:
            await watcher.subscribe(None)
            events = watcher.events()
            first = await anext(events)
            later = ref.permissions.open("Write", {"file_path": "x"})
            second = await anext(events)  # the next one, not the first again
        tg.cancel_scope.cancel()
    assert isinstance(first, PermissionRequested) and isinstance(second, PermissionRequested)
    assert [first.request.id, second.request.id] == [open_one.id, later.id]


async def test_a_client_that_comes_as_the_run_ends_is_told_it_has_ended(tmp_path: Path) -> None:
    # Between the run's end and its socket's close (a short `-p` run the bridge follows).
    ref = Run(tmp_path / "home", tmp_path, starts_on=ClaudeStart("c-1", "startup", tmp_path / "c-1.jsonl"))
    controller = SessionController(
        ref, mode="local", pid=os.getpid(), transcript=lambda _: tmp_path / "t.jsonl", clock=lambda: 0
    )
    ref.get()
    async with anyio.create_task_group() as tg:
        path = await tg.start(partial(serve, controller, tmp_path))
        ref.end("completed")
        async with connect(path) as client:
            assert (await client.hello()).session.happy_session_id is None
            with pytest.raises(SessionEndedError, match="has ended"):
                await client.subscribe(0)
            with pytest.raises(SessionEndedError, match="has ended"):
                await client.send("m-1", "hello")
        tg.cancel_scope.cancel()


async def test_subscribe_from_a_seq_then_live(tmp_path: Path) -> None:
    controller, made = FakeController(facts()), Envelopes()
    controller.commit(made.make(5))
    async with running(controller, tmp_path) as path, connect(path) as client:
        await client.subscribe(2)
        assert await envelopes_until(client, 5) == [3, 4, 5]
        controller.commit(made.make(2))
        assert await envelopes_until(client, 7) == [6, 7]
        with pytest.raises(ControlProtocolError, match="already subscribed"):
            await client.subscribe(0)


async def test_a_stop_hands_subscribers_the_last_envelopes_then_closes(tmp_path: Path) -> None:
    """The session ends: what it committed last still reaches its watchers, then EOF; nobody new
    gets in, and the socket is gone."""
    controller, made = FakeController(facts()), Envelopes()
    stop = anyio.Event()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            path: Path = await tg.start(partial(serve, controller, tmp_path, stop=stop))
            async with connect(path) as client:
                await client.subscribe(None)  # returns with its ok reply: subscribed
                controller.commit(made.make(3))  # the session's last envelopes ...
                stop.set()  # ... and its end, at once
                seqs = [e.seq async for e in client.events() if isinstance(e, EnvelopeBytes)]
    assert seqs == [1, 2, 3]
    assert not await anyio.Path(path).exists()


async def test_the_envelope_arrives_exactly_as_stored(tmp_path: Path) -> None:
    controller, made = FakeController(facts()), Envelopes()
    async with running(controller, tmp_path) as path, connect(path) as client:
        await client.subscribe(None)
        controller.commit(made.make(1))
        event = await anext(client.events())
    assert event == EnvelopeBytes(1, controller.stored[0][1])


@pytest.mark.parametrize("chunk_edge", [False, True])
async def test_no_gap_and_no_duplicate_at_the_seam(tmp_path: Path, chunk_edge: bool) -> None:
    """History then live, with commits landing inside the history reads: each seq comes once."""

    controller, made = FakeController(facts()), Envelopes()
    first = control_subscription.HISTORY_CHUNK if chunk_edge else 10
    controller.commit(made.make(first))
    during: list[int] = []

    def commit_during_the_read() -> None:
        if len(during) < 3:
            during.extend(controller.commit(made.make(2)))  # stored and notified before the read returns

    controller.before_history = commit_during_the_read
    async with running(controller, tmp_path) as path, connect(path) as client:
        await client.subscribe(0)
        controller.commit(made.make(1))  # and one after
        total = len(controller.stored)
        assert await envelopes_until(client, total) == list(range(1, total + 1))
    # At the chunk's edge a second read follows, with commits of its own.
    assert len(during) == (4 if chunk_edge else 2) and total == first + len(during) + 1


async def test_garbage_gets_error_replies_and_the_connection_stays_usable(tmp_path: Path) -> None:
    garbage = [
        b"not json",
        b"[1, 2]",
        b'{"type":"nope","id":"g1"}',
        b'{"type":"send","id":"g2","text":"no message id"}',
        b'{"type":"hello","id":"g3","versions":[1],"extra":1}',
        b"\xff\xfe\x00binary",
    ]
    controller = FakeController(facts())
    async with running(controller, tmp_path) as path:
        payload = b"\n".join(garbage) + b"\n\n" + b'{"type":"status","id":"ok"}\n'
        replies = await raw_exchange(path, payload, len(garbage) + 1)
    codes = [(r["type"], r.get("code"), r["id"]) for r in replies]
    assert codes == [
        ("error", "bad-json", None),
        ("error", "bad-request", None),
        ("error", "bad-request", "g1"),
        ("error", "bad-request", "g2"),
        ("error", "bad-request", "g3"),
        ("error", "bad-json", None),
        ("status", None, "ok"),
    ]
    assert "message_id" in str(replies[3]["message"]) and not controller.sent


async def test_an_oversized_line_is_refused_and_the_next_one_served(tmp_path: Path) -> None:
    async with running(FakeController(facts()), tmp_path) as path:
        huge = b'{"type":"send","id":"big","message_id":"m","text":"' + b"x" * MAX_REQUEST_LINE + b'"}\n'
        replies = await raw_exchange(path, huge + b'{"type":"status","id":"after"}\n', 2)
    assert replies[0]["code"] == "too-long" and replies[1]["id"] == "after"
    assert "a message to send is at most 1 MiB" in str(replies[0]["message"])


async def test_a_stalled_reader_is_dropped_without_slowing_anyone(tmp_path: Path) -> None:
    """Client A subscribes and stops reading; the session commits on and client B gets every
    envelope. A then finds a `dropped` line after a prefix of the stream, and catches up from the
    store on a new connection."""
    controller, made = FakeController(facts()), Envelopes()
    limits = ServerLimits(outbox=64 << 10, grace=60.0)
    count = 3000  # 3 MB: far more than A's socket buffers and outbox hold
    async with running(controller, tmp_path, limits=limits) as path:
        async with connect(path) as stalled, connect(path) as reader:
            await stalled.subscribe(0)
            await reader.subscribe(0)
            events = reader.events()
            for n in range(1, count + 1):
                controller.commit(made.make(1, size=1000))  # returns at once: it only queues
                event = await anext(events)
                assert isinstance(event, EnvelopeBytes) and event.seq == n
            received: list[int] = []
            async for event in stalled.events():
                if isinstance(event, EnvelopeBytes):
                    received.append(event.seq)
                else:
                    assert isinstance(event, Dropped)
            assert received == list(range(1, len(received) + 1)) and len(received) < count
        async with connect(path) as again:
            await again.subscribe(received[-1] if received else 0)
            rest = await envelopes_until(again, count)
    assert received + rest == list(range(1, count + 1))
    assert controller.subscribers == 0


async def test_a_session_loads_what_serving_a_client_needs_before_any_client_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = threading.Event()
    monkeypatch.setattr(control_server, "load_protocol", loaded.set)
    async with anyio.create_task_group() as tg:
        await tg.start(partial(serve, FakeController(facts()), tmp_path, warm_after=0))
        assert await anyio.to_thread.run_sync(loaded.wait, 10)
        tg.cancel_scope.cancel()


async def test_a_stop_does_not_wait_for_the_warm_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = threading.Event()
    monkeypatch.setattr(control_server, "load_protocol", loaded.set)
    stop = anyio.Event()
    with anyio.fail_after(10):  # the warm-up is 60 s away: the server must not wait for it
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve, FakeController(facts()), tmp_path, stop=stop, warm_after=60))
            stop.set()
    assert not loaded.is_set()
