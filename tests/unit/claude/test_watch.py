"""The directory watcher's fallbacks are logged, once each (never silent, never a flood)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from happy_launcher.claude.watch import PollingWatcher
from happy_launcher.claude.watch.inotify import InotifyWatcher


def test_a_failed_watch_is_logged_once_and_a_vanished_directory_not_at_all(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "back")
    (tmp_path / "back").symlink_to(loop)  # ELOOP: a real inotify_add_watch failure, even as root
    watcher = InotifyWatcher()
    try:
        with caplog.at_level(logging.WARNING, logger="happy_launcher.claude.watch.inotify"):
            for _ in range(3):  # the scanner calls watch() on every wake-up
                watcher.watch({loop, tmp_path / "gone"})
    finally:
        watcher.close()
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot watch {loop} for changes (Too many levels of symbolic links): "
        "records there arrive with the periodic re-read only"
    ]


# inotify_init1 fails like it does at the per-user instance limit: no file descriptor left.
NO_INOTIFY = """
import logging, os, resource, sys
from happy_launcher.claude.watch import PollingWatcher, make_watcher
logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
print(type(make_watcher()).__name__)
"""


def test_no_inotify_falls_back_to_polling_with_one_log_line() -> None:
    done = subprocess.run([sys.executable, "-c", NO_INOTIFY], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "PollingWatcher\n"
    assert done.stderr.splitlines() == [
        "WARNING happy_launcher.claude.watch inotify unavailable ([Errno 24] Too many open files): "
        "transcripts are re-read periodically, records arrive later"
    ]


@pytest.mark.anyio
async def test_the_watcher_says_which_files_changed(tmp_path: Path) -> None:
    watcher = InotifyWatcher()
    try:
        watcher.watch({tmp_path})
        assert watcher.changes() is None  # a new watch: what came before it was not seen
        (tmp_path / "a.jsonl").write_bytes(b"x\n")
        with anyio.fail_after(5):
            await watcher.wait(30)
        assert watcher.changes() == {str(tmp_path / "a.jsonl")}
        assert watcher.changes() == set()
        await watcher.wait(0.001)  # a timeout: unknown, read everything
        assert watcher.changes() is None
        watcher.wake()
        with anyio.fail_after(5):
            await watcher.wait(30)  # returns at once
        assert watcher.changes() is None
    finally:
        watcher.close()


@pytest.mark.anyio
async def test_a_wait_ends_by_its_own_timeout_whatever_timer_an_earlier_wait_left(tmp_path: Path) -> None:
    # The timer of a wait that an event ended is kept for the next waits (not one per record
    # Claude writes); a wait with a shorter timeout still ends by its own.
    watcher = InotifyWatcher()
    try:
        watcher.watch({tmp_path})
        watcher.changes()
        (tmp_path / "a.jsonl").write_bytes(b"x\n")
        with anyio.fail_after(5):
            await watcher.wait(3600)
        assert watcher.changes() == {str(tmp_path / "a.jsonl")}
        with anyio.fail_after(5):
            await watcher.wait(0.01)  # no event comes: its own timeout, not the hour left armed
        assert watcher.changes() is None
    finally:
        watcher.close()


@pytest.mark.anyio
async def test_a_listener_is_called_for_events_a_wake_and_its_timer_instead_of_a_waiter(
    tmp_path: Path,
) -> None:
    watcher = InotifyWatcher()
    heard: list[set[str] | None] = []
    called = anyio.Event()

    def listener() -> None:
        heard.append(watcher.changes())
        called.set()

    async def next_call() -> set[str] | None:
        nonlocal called
        with anyio.fail_after(5):
            await called.wait()
        called = anyio.Event()
        return heard.pop()

    try:
        watcher.watch({tmp_path})
        watcher.changes()
        assert watcher.listen(listener)
        (tmp_path / "a.jsonl").write_bytes(b"x\n")
        assert await next_call() == {str(tmp_path / "a.jsonl")}  # in the loop's reader callback
        watcher.wake()
        assert not heard  # soon, not from inside `wake`
        assert await next_call() is None
        watcher.arm(0.01)
        assert await next_call() is None  # its timer ran out: read everything
        assert watcher.listen(None)
        (tmp_path / "b.jsonl").write_bytes(b"x\n")
        with anyio.fail_after(5):
            await watcher.wait(30)  # a waiter again
        assert not heard and watcher.changes() == {str(tmp_path / "b.jsonl")}
    finally:
        watcher.close()


@pytest.mark.anyio
async def test_unwatched_directories_are_silent_until_watched_again(tmp_path: Path) -> None:
    watcher = InotifyWatcher()
    try:
        watcher.watch({tmp_path})
        watcher.changes()
        watcher.unwatch()
        (tmp_path / "a.jsonl").write_bytes(b"x\n")
        await watcher.wait(0.05)  # no event wakes it: a timeout
        assert watcher.changes() is None
        watcher.watch({tmp_path})  # watched again: changes are seen again
        watcher.changes()
        (tmp_path / "b.jsonl").write_bytes(b"x\n")
        with anyio.fail_after(5):
            await watcher.wait(30)
        assert watcher.changes() == {str(tmp_path / "b.jsonl")}
    finally:
        watcher.close()


@pytest.mark.anyio
async def test_a_watched_file_is_not_woken_by_its_neighbours(tmp_path: Path) -> None:
    mine, other = tmp_path / "mine.jsonl", tmp_path / "other.jsonl"
    mine.write_bytes(b"")
    other.write_bytes(b"")
    watcher = InotifyWatcher()
    try:
        watcher.watch(set(), {mine})
        watcher.changes()
        with other.open("ab") as f:  # another session's appends, in the same directory
            f.write(b"x\n")
        with mine.open("ab") as f:
            f.write(b"y\n")
        with anyio.fail_after(5):
            await watcher.wait(30)
        assert watcher.changes() == {str(mine)}  # the neighbour's writes made no event at all
    finally:
        watcher.close()


@pytest.mark.anyio
async def test_a_watched_file_is_followed_when_it_appears_late_or_is_replaced(tmp_path: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    watcher = InotifyWatcher()
    try:
        watcher.watch(set(), {mine})  # not there yet: its directory tells when it arrives
        watcher.changes()
        mine.write_bytes(b"a\n")
        with anyio.fail_after(5):
            await watcher.wait(30)
        assert str(mine) in (watcher.changes() or set())
        watcher.watch(set(), {mine})  # as the scanner does before each read: now the file itself
        watcher.changes()
        (tmp_path / "new").write_bytes(b"b\n")
        (tmp_path / "new").replace(mine)  # a new inode under the name
        with anyio.fail_after(5):
            await watcher.wait(30)
        watcher.watch(set(), {mine})
        watcher.changes()
        with mine.open("ab") as f:
            f.write(b"c\n")
        with anyio.fail_after(5):
            await watcher.wait(30)
        assert watcher.changes() == {str(mine)}  # the new file's writes are seen
    finally:
        watcher.close()


def test_it_hears_all_once_each_path_is_watched_or_would_be_heard_arriving(tmp_path: Path) -> None:
    """The scanner's safety re-read is rare only while no change can go unheard."""
    project = tmp_path / "project"
    main, session = project / "s1.jsonl", project / "s1"
    subagents = session / "subagents"
    watcher = InotifyWatcher()
    try:
        watcher.watch({session, subagents}, {main})
        assert not watcher.hears_all()  # the project directory is not there: nothing would tell
        project.mkdir()
        watcher.wake()  # as the re-read does: look again for what was not there
        watcher.watch({session, subagents}, {main})
        # The file and the session directory would arrive in the watched project directory,
        # and the subagents directory in the session directory once that is watched.
        assert watcher.hears_all()
        main.write_bytes(b"")
        session.mkdir()
        watcher.watch(set(), set())  # asked for nothing: nothing to miss
        assert watcher.hears_all()
        watcher.watch({subagents}, {main})  # its parent is not asked for: its arrival goes unheard
        assert not watcher.hears_all()
        subagents.mkdir()
        watcher.wake()
        watcher.watch({subagents}, {main})
        assert watcher.hears_all()
        loop = tmp_path / "loop"
        loop.symlink_to(tmp_path / "back")
        (tmp_path / "back").symlink_to(loop)
        watcher.watch({subagents, loop}, {main})  # a watch that fails: only the re-read sees there
        assert not watcher.hears_all()
    finally:
        watcher.close()
    assert not PollingWatcher().hears_all()


def queue_limit() -> int:
    """The events an inotify instance queues before it drops them (and says so)."""
    return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())


@pytest.mark.anyio
async def test_arrivals_lost_in_an_overflow_are_watched_at_once(tmp_path: Path) -> None:
    """The safety re-read is 10 s apart once all is heard: lost events must not wait for it."""
    main, session = tmp_path / "s1.jsonl", tmp_path / "s1"
    subagents = session / "subagents"
    session.mkdir()
    main.write_bytes(b"")
    dirs = {session, subagents}
    watcher = InotifyWatcher()
    try:
        watcher.watch(dirs, {main})
        watcher.changes()
        limit = queue_limit()
        files = [main.open("ab", buffering=0), (session / "x").open("ab", buffering=0)]
        for i in range(limit + 1):  # alternating: consecutive events of one file would merge
            files[i % 2].write(b"x")
        for file in files:
            file.close()
        subagents.mkdir()  # the queue is full: these arrivals are lost
        (tmp_path / "new").write_bytes(b"")
        (tmp_path / "new").replace(main)
        with anyio.fail_after(5):
            await watcher.wait(30)
        assert watcher.changes() is None  # events were lost: read everything
        watcher.watch(dirs, {main})  # as the scanner does before its read
        assert watcher.changes() is None  # new watches: what came before them was not seen
        (subagents / "agent-1.jsonl").write_bytes(b"{}\n")
        with main.open("ab") as f:
            f.write(b"{}\n")
        changed: set[str] = set()
        with anyio.fail_after(5):
            while len(changed) < 2:  # heard, not found by a re-read
                await watcher.wait(30)
                changed |= watcher.changes() or set()
        assert changed == {str(subagents / "agent-1.jsonl"), str(main)}
    finally:
        watcher.close()
