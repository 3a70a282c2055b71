"""The inotify `Watcher` (the protocol and the polling fallback are in this package's `__init__.py`).

The scanner wakes once per record Claude writes, so a wake-up is kept cheap: on asyncio the
inotify fd stays registered with the loop, the scanner is called from its reader callback
(`listen`: no task woken) and the timeout is a loop timer, and the watcher says which files
changed, so that the others are not re-read. A file the caller owns in a directory it shares (a
transcript in the project directory, beside other sessions' transcripts) is watched by itself,
and its directory only for arrivals: other sessions' appends never wake this one.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import struct
import threading
from collections.abc import Callable, Set
from pathlib import Path

import anyio

_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_IN_ONLYDIR = 0x01000000
# modify, close-after-write, moved in, create, delete self, move self; directories only
_MASK = 0x002 | 0x008 | 0x080 | 0x100 | 0x400 | 0x800 | _IN_ONLYDIR
# A shared directory: only what arrives (a file we wait for, or its replacement), never writes.
_ARRIVALS = 0x080 | 0x100 | 0x400 | 0x800 | _IN_ONLYDIR
_FILE = 0x002 | 0x008 | 0x400 | 0x800  # a file's own writes, and its going away
_IN_IGNORED = 0x8000  # the watch is gone (its directory was deleted or unmounted)
_IN_ISDIR = 0x40000000
_IN_ARRIVED = 0x100 | 0x080  # created, moved in
_IN_Q_OVERFLOW = 0x4000  # events were lost
_MAX_CHANGED = 256  # more changed paths than that: say "unknown", the caller reads everything
_BUFFER = 4096  # ~100 events; more are read by a second read (a 64 KB buffer costs more per wake-up)
_MAX_EVENT = 16 + 256  # struct inotify_event + NAME_MAX + 1
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (+ name)


_log = logging.getLogger(__name__)


class InotifyWatcher:
    """Owns one inotify instance and its watches: on directories, and on single files, each
    with its directory watched for arrivals (Claude creates files late, or replaces them: the
    directory sees them appear, and the file is watched again). Events only wake the waiter;
    which file changed is for the caller to find out by reading."""

    def __init__(self) -> None:
        # The running program's own symbols include libc's (ctypes.util.find_library would
        # fork `ldconfig -p` to find the same library).
        self._libc = ctypes.CDLL(None, use_errno=True)
        fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self._fd: int = fd
        self._watched: dict[int, tuple[Path, int]] = {}  # wd -> (path, mask)
        self._prefixes: dict[int, bytes] = {}  # wd -> its directory + "/", for `changes`
        self._files: dict[int, str] = {}  # wd -> a watched file (`os.fspath`), for `changes`
        self._unwatchable: set[Path] = set()  # failed and logged
        self._asked: tuple[frozenset[Path], frozenset[Path]] = (frozenset(), frozenset())
        self._wanted: dict[Path, int] = {}  # path -> mask
        self._wanted_files: frozenset[str] = frozenset()
        self._recheck = False  # directories not watched yet may exist now
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Event | None = None  # asyncio: set when a wait may return
        self._timer: asyncio.TimerHandle | None = None  # asyncio: ends the current wait at the latest
        self._scope: anyio.CancelScope | None = None  # other backends: the wait `wake` cancels
        self._listener: Callable[[], None] | None = None  # asyncio: called instead of ending waits
        self._woken = False
        self._changed: set[str] | None = None  # see `changes`; nothing is known at first
        self._all_heard: bool | None = None  # `hears_all`, until the watches change

    def watch(self, directories: Set[Path], files: Set[Path] = frozenset()) -> None:
        """Called before every read: cheap unless something changed. A path that does not
        exist (yet) is tried again only when it may have appeared: something arrived in a
        watched directory, a watch went away, or a wait ended without an event (a periodic
        re-read)."""
        if (directories, files) != self._asked:
            self._asked = (frozenset(directories), frozenset(files))
            wanted = {file.parent: _ARRIVALS for file in files}
            wanted.update((directory, _MASK) for directory in directories)
            wanted.update((file, _FILE) for file in files)
            self._wanted = wanted
            self._wanted_files = frozenset(map(os.fspath, files))
            self._recheck = True
            self._all_heard = None
        if not self._recheck:
            return
        self._recheck = False
        have = set(self._watched.values())
        for path, mask in self._wanted.items():
            if (path, mask) not in have:
                self._add(path, mask)

    def _add(self, path: Path, mask: int) -> None:
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask)
        self._all_heard = None
        if wd >= 0:
            self._forget(wd)  # the same inode again (its mask replaced), or a new one
            self._watched[wd] = (path, mask)
            if mask == _FILE:
                self._files[wd] = os.fspath(path)
            else:
                self._prefixes[wd] = os.fsencode(path) + b"/"
            self._unwatchable.discard(path)
            self._changed = None  # what was written there before the watch was not seen
            return
        err = ctypes.get_errno()
        # ENOENT, ENOTDIR: not (or no longer) there, nothing to see
        if err not in (errno.ENOENT, errno.ENOTDIR) and path not in self._unwatchable:
            self._unwatchable.add(path)
            _log.warning(
                "cannot watch %s for changes (%s): records there arrive with the periodic re-read only%s",
                path,
                os.strerror(err),
                "; raise fs.inotify.max_user_watches" if err == errno.ENOSPC else "",
            )

    def _forget(self, wd: int) -> None:
        self._all_heard = None
        self._watched.pop(wd, None)
        self._prefixes.pop(wd, None)
        self._files.pop(wd, None)

    async def wait(self, within: float) -> None:
        ready = self._registered()
        if ready is None:
            await self._wait_portably(within)
        elif not self._woken and not ready.is_set():  # set: events came (drained) since the last wait
            self.arm(within)
            await ready.wait()
        if ready is not None:
            ready.clear()
        self._woken = False

    async def _wait_portably(self, within: float) -> None:
        if self._woken or self._drain():
            return
        with anyio.move_on_after(within) as self._scope:
            await anyio.wait_readable(self._fd)
        self._scope = None
        if not self._drain():
            self._unknown()

    def wake(self) -> None:
        self._unknown()
        if self._listener is not None:
            assert self._loop is not None  # registered with it
            self._loop.call_soon(self._heard)
            return
        self._woken = True
        if self._ready is not None:
            self._ready.set()
        if self._scope is not None:
            self._scope.cancel()

    def listen(self, listener: Callable[[], None] | None) -> bool:
        """A listener is called in the loop's own callbacks: no task woken per record (its
        future, its step and a second poll of the loop cost ~0.2 ms of CPU a record here)."""
        if listener is None:
            self._listener = None
            return True
        if self._registered() is None:
            return False
        self._listener, self._woken = listener, False
        return True

    def _heard(self) -> None:
        if self._listener is not None:
            self._listener()

    def changes(self) -> set[str] | None:
        changed, self._changed = self._changed, set()
        return changed

    def hears_all(self) -> bool:
        if self._all_heard is None:
            watched = set(self._watched.values())
            self._all_heard = not self._unwatchable and all(
                self._hears(path, mask, watched) for path, mask in self._wanted.items()
            )
        return self._all_heard

    def _hears(self, path: Path, mask: int, watched: set[tuple[Path, int]]) -> bool:
        """Watched, or it would arrive in a directory whose own arrival is heard (`_note`
        rechecks on a directory or wanted file arriving, and `watch` then adds it)."""
        if (path, mask) in watched:
            return True
        parent = self._wanted.get(path.parent, 0) if path.parent != path else 0
        return parent & _IN_ARRIVED == _IN_ARRIVED and self._hears(path.parent, parent, watched)

    def arm(self, within: float) -> None:
        """Make the wait end within `within` s. A timer already due by then is kept (no new
        one per wake-up, and there is one per record Claude writes): a wait may end early, in a
        read of everything, at most once per timer (the safety poll's re-read, no more)."""
        assert self._loop is not None  # registered with it
        deadline = self._loop.time() + within
        if self._timer is not None:
            if self._timer.when() <= deadline:
                return
            self._timer.cancel()
        self._timer = self._loop.call_at(deadline, self._timed_out)

    def _timed_out(self) -> None:
        self._timer = None
        self._unknown()
        if self._listener is not None:
            self._listener()
        elif self._ready is not None:
            self._ready.set()

    def _unknown(self) -> None:
        # Nothing said what changed (a timeout, a wake): read everything, and look for the
        # directories not watched yet.
        self._changed = None
        self._recheck = True

    def _on_readable(self) -> None:
        # Drained here, in the loop's callback: the loop may run it once more for a readiness it
        # saw before we drained, and that must not wake the waiter for nothing.
        if not self._drain():
            return
        if self._listener is not None:
            self._listener()
        elif self._ready is not None:
            self._ready.set()

    def _registered(self) -> asyncio.Event | None:
        """On asyncio the fd stays registered with the loop while the watcher lives (no pair of
        epoll_ctl calls per wake-up, and there is one per record Claude writes): the event set
        when events came. Other backends: None."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        if loop is not self._loop or self._ready is None:
            self._unregister()
            self._ready = asyncio.Event()
            loop.add_reader(self._fd, self._on_readable)
            self._loop = loop
        return self._ready

    def _unregister(self) -> None:
        self._listener = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        self._loop = None

    def _drain(self) -> bool:
        """Consume queued events (the scanner re-reads by offset); True if there were any."""
        got = False
        while True:
            try:
                data = os.read(self._fd, _BUFFER)
            except BlockingIOError:
                return got
            got = True
            pos = 0
            while pos + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
                name = data[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0")
                pos += _EVENT.size + length
                self._note(wd, mask, name)
            if len(data) + _MAX_EVENT <= _BUFFER:  # the queue was empty: no read just to hear so
                return True

    def _note(self, wd: int, mask: int, name: bytes) -> None:
        path = self._files.get(wd)
        prefix = self._prefixes.get(wd)
        if path is None and prefix is not None and name:
            path = os.fsdecode(prefix + name)
        if mask & _IN_Q_OVERFLOW:
            # Lost events may have held an arrival (a directory, a file renamed over ours):
            # look again for everything, every file watched anew, not at the next safety re-read.
            self._recheck = True
            for wanted in self._wanted_files:
                self._drop_file(wanted)
        elif mask & _IN_IGNORED:  # forget it, so `watch` adds the path again if it returns
            self._forget(wd)
            self._recheck = True
        elif mask & _IN_ARRIVED and (mask & _IN_ISDIR or path in self._wanted_files):
            # maybe a directory we wait for; a file we wait for, or a new one in its place:
            # watch that one (a watch follows an inode, not a name)
            self._recheck = True
            if path in self._wanted_files:
                self._drop_file(path)
        if path is None or mask & _IN_Q_OVERFLOW:
            self._changed = None  # a directory itself, or lost events: unknown
        elif self._changed is not None:
            self._changed.add(path)
            if len(self._changed) > _MAX_CHANGED:  # nobody asks (the hook watcher): stay small
                self._changed = None

    def _drop_file(self, path: str) -> None:
        for wd, name in list(self._files.items()):
            if name == path:
                self._libc.inotify_rm_watch(self._fd, wd)
                self._forget(wd)

    def unwatch(self) -> None:
        """Drop the watches. The kernel frees them in the background; closing the instance
        waits for that (8-16 ms: an RCU grace period), so dropping them a few ms before the
        close (once Claude has exited, before the final reads) makes the close instant."""
        for wd in self._watched:
            self._libc.inotify_rm_watch(self._fd, wd)
        self._watched.clear()
        self._prefixes.clear()
        self._files.clear()
        self._asked = (frozenset(), frozenset())
        self._wanted = {}
        self._wanted_files = frozenset()
        self._all_heard = None

    def close(self) -> None:
        """Stop watching. The descriptor is closed by a thread: unless `unwatch` came a little
        earlier, the close waits for the watches to be freed (see there), which would delay
        happy's exit after Claude's; the process still ends only once it is closed."""
        if self._fd >= 0:
            self._unregister()
            fd, self._fd = self._fd, -1
            threading.Thread(target=os.close, args=(fd,), name="inotify-close", daemon=True).start()
