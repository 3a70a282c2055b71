"""The live scanner: woken by inotify (or polling), incremental, deduplicated, late files."""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from happy_launcher.claude.records import Record
from happy_launcher.claude.scanner import SAFETY_POLL, SAFETY_POLL_HEARD, TranscriptScanner
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.claude.watch import PollingWatcher, Watcher
from happy_launcher.claude.watch.fake import FakeWatcher
from happy_launcher.claude.watch.inotify import InotifyWatcher
from tests.support.transcripts import assistant, subagent_paths, user, write_jsonl, write_subagent

pytestmark = pytest.mark.anyio


async def next_uuids(stream: MemoryObjectReceiveStream[list[Record]], count: int) -> list[str | None]:
    got: list[str | None] = []
    with anyio.fail_after(5):
        while len(got) < count:
            got += [r.uuid for r in await stream.receive()]
    return got


@pytest.mark.parametrize("watcher_kind", ["inotify", "polling"])
async def test_appended_records_late_files_and_session_change(tmp_path: Path, watcher_kind: str) -> None:
    main = tmp_path / "proj" / "s1.jsonl"
    main.parent.mkdir()
    watcher: Watcher = InotifyWatcher() if watcher_kind == "inotify" else PollingWatcher()
    poll = 30.0 if watcher_kind == "inotify" else 0.02  # inotify must wake the scanner by itself
    scanner = TranscriptScanner(SessionFiles(), watcher, poll_interval=poll)
    scanner.add_main(main)  # the file does not exist yet: Claude creates it on the first prompt
    send, receive = anyio.create_memory_object_stream[list[Record]](100)
    async with anyio.create_task_group() as tg:
        await tg.start(scanner.run, send.send_nowait)
        write_jsonl(main, [user("u1", "hi")])
        assert await next_uuids(receive, 1) == ["u1"]
        with main.open("ab") as f:  # half a line first: nothing until it is complete
            f.write(b'{"type":"assistant","uuid":"a1",')
            f.flush()
            f.write(b'"message":{"content":[]}}\n')
        assert await next_uuids(receive, 1) == ["a1"]
        write_subagent(main, "ag", "toolu_1", [assistant("s1", isSidechain=True)])
        assert await next_uuids(receive, 1) == ["s1"]
        jsonl, _ = subagent_paths(main, "ag")
        write_jsonl(jsonl, [assistant("s2", isSidechain=True)], append=True)
        assert await next_uuids(receive, 1) == ["s2"]
        second = main.with_name("s2.jsonl")  # /clear: a new session id and file
        write_jsonl(second, [user("u1", "hi"), user("u2", "new")])
        scanner.add_main(second)
        assert await next_uuids(receive, 1) == ["u2"]
        write_jsonl(main, [assistant("a-old")], append=True)  # the old file is still watched
        assert await next_uuids(receive, 1) == ["a-old"]
        tg.cancel_scope.cancel()
    watcher.close()


@pytest.mark.parametrize("watcher_kind", ["inotify", "polling"])  # read in loop callbacks, in a task
async def test_a_large_backlog_goes_in_bounded_batches_with_the_loop_free_between(
    tmp_path: Path, watcher_kind: str
) -> None:
    main = tmp_path / "proj" / "s1.jsonl"
    write_jsonl(main, [user(f"u{n}", "x" * 1000) for n in range(2000)])  # ~2 MB of history to send
    budget = 1 << 16
    watcher: Watcher = InotifyWatcher() if watcher_kind == "inotify" else PollingWatcher()
    scanner = TranscriptScanner(SessionFiles(), watcher, poll_interval=30.0, batch_bytes=budget)
    scanner.add_main(main)
    events: list[str] = []
    sizes: list[int] = []
    records = 0
    done = anyio.Event()

    def deliver(batch: list[Record]) -> None:
        nonlocal records
        events.append("batch")
        sizes.append(sum(r.size for r in batch))
        records += len(batch)
        if records == 2000:
            done.set()

    async def other_task() -> None:  # e.g. the hook reader: it must get turns during the backlog
        while True:
            events.append("other")
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(other_task)
        await tg.start(scanner.run, deliver)
        with anyio.fail_after(10):
            await done.wait()
        tg.cancel_scope.cancel()
    watcher.close()
    assert len(sizes) > 2_000_000 // budget - 2
    assert max(sizes) <= budget + 1100  # + the line that straddles the budget
    batches = [i for i, e in enumerate(events) if e == "batch"]
    assert all("other" in events[a:b] for a, b in itertools.pairwise(batches))


async def test_a_wake_up_reads_what_the_watcher_says_changed_a_plain_one_all(tmp_path: Path) -> None:
    first, second = tmp_path / "proj" / "s1.jsonl", tmp_path / "proj" / "s2.jsonl"
    write_jsonl(first, [user("u0", "hi")])
    watcher = FakeWatcher()
    scanner = TranscriptScanner(SessionFiles(), watcher)
    scanner.add_main(first)
    scanner.add_main(second)
    send, receive = anyio.create_memory_object_stream[list[Record]](100)
    async with anyio.create_task_group() as tg:
        await tg.start(scanner.run, send.send_nowait)
        assert await next_uuids(receive, 1) == ["u0"]  # added: read whole
        assert {first, first.with_suffix("")} <= watcher.watched
        assert tmp_path / "proj" not in watcher.watched  # shared with other sessions: their files only
        write_jsonl(first, [assistant("a1")], append=True)
        write_jsonl(second, [user("u2", "other")])
        watcher.change(first)
        assert await next_uuids(receive, 1) == ["a1"]  # the other file is not looked at
        watcher.wake()
        assert await next_uuids(receive, 1) == ["u2"]
        tg.cancel_scope.cancel()
    assert watcher.watched == set()  # cancelled: the final reads wait for nothing


@pytest.mark.parametrize("watcher_kind", ["inotify", "polling"])
async def test_a_delivery_that_fails_ends_the_run_with_its_error(tmp_path: Path, watcher_kind: str) -> None:
    main = tmp_path / "proj" / "s1.jsonl"
    main.parent.mkdir()
    watcher: Watcher = InotifyWatcher() if watcher_kind == "inotify" else PollingWatcher()
    scanner = TranscriptScanner(SessionFiles(), watcher, poll_interval=0.02)
    scanner.add_main(main)
    delivered: list[str | None] = []

    def deliver(batch: list[Record]) -> None:
        delivered.extend(r.uuid for r in batch)
        if "boom" in delivered:
            raise RuntimeError("the store is gone")

    with pytest.raises(ExceptionGroup) as raised, anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await tg.start(scanner.run, deliver)
            write_jsonl(main, [user("u1", "hi")])
            write_jsonl(main, [user("boom", "again")], append=True)
            await anyio.sleep_forever()
    watcher.close()
    [error] = raised.value.exceptions
    assert isinstance(error, RuntimeError) and str(error) == "the store is gone"
    assert delivered[-1] == "boom"


async def test_the_safety_re_read_is_rare_once_the_watcher_hears_every_path(tmp_path: Path) -> None:
    """Every session re-reading its files each second cost a fifth of a record's CPU; that is
    kept for a watcher that may miss a change (a watch failed, a directory not there yet)."""
    main = tmp_path / "proj" / "s1.jsonl"
    write_jsonl(main, [user("u0", "hi")])
    watcher = FakeWatcher()
    scanner = TranscriptScanner(SessionFiles(), watcher, poll_interval=SAFETY_POLL)
    scanner.add_main(main)

    async def next_wait() -> float:
        count = len(watcher.waits)
        watcher.change(main)
        while len(watcher.waits) == count:  # the scanner reads, then waits again
            await anyio.lowlevel.checkpoint()
        return watcher.waits[-1]

    async with anyio.create_task_group() as tg:
        await tg.start(scanner.run, lambda batch: None)
        with anyio.fail_after(5):
            assert await next_wait() == SAFETY_POLL
            watcher.hears = True
            assert await next_wait() == SAFETY_POLL_HEARD
            watcher.hears = False
            assert await next_wait() == SAFETY_POLL
        tg.cancel_scope.cancel()
    assert SAFETY_POLL_HEARD >= 10 * SAFETY_POLL
