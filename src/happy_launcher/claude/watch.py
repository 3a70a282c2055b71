"""Waiting for changes in transcript directories: inotify on Linux, polling elsewhere.

inotify wakes the scanner within a millisecond of Claude's write and costs nothing while idle;
watchfiles was not used because it delivers changes in batches at least `step` ms apart.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import struct
from collections.abc import Set
from pathlib import Path
from typing import Protocol

import anyio

_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
# modify, close-after-write, moved in, create, delete self, move self; directories only
_MASK = 0x002 | 0x008 | 0x080 | 0x100 | 0x400 | 0x800 | 0x01000000
_IN_IGNORED = 0x8000  # the watch is gone (its directory was deleted or unmounted)
_IN_ISDIR = 0x40000000
_IN_ARRIVED = 0x100 | 0x080  # created, moved in
_BUFFER = 65536
_MAX_EVENT = 16 + 256  # struct inotify_event + NAME_MAX + 1
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (+ name)
_log = logging.getLogger(__name__)


class Watcher(Protocol):
    def watch(self, directories: Set[Path]) -> None:
        """Make sure these directories (those that exist) are watched."""

    async def wait(self) -> None:
        """Return when something may have changed; callers bound it (the polling interval)."""

    def close(self) -> None: ...


class PollingWatcher:
    """The fallback: every wait lasts the whole timeout; the caller re-reads its files."""

    def watch(self, directories: Set[Path]) -> None:
        pass

    async def wait(self) -> None:
        await anyio.sleep_forever()

    def close(self) -> None:
        pass


class InotifyWatcher:
    """Owns one inotify instance and its watches on directories (never files: Claude creates
    files late, and a directory watch sees them appear). Events only wake the waiter; which file
    changed is for the caller to find out by reading."""

    def __init__(self) -> None:
        # The running program's own symbols include libc's (ctypes.util.find_library would
        # fork `ldconfig -p` to find the same library).
        self._libc = ctypes.CDLL(None, use_errno=True)
        fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self._fd: int = fd
        self._watched: dict[int, Path] = {}
        self._unwatchable: set[Path] = set()  # failed and logged
        self._wanted: frozenset[Path] = frozenset()
        self._recheck = False  # directories not watched yet may exist now
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Event | None = None

    def watch(self, directories: Set[Path]) -> None:
        """Called before every read: cheap unless something changed. A directory that does not
        exist (yet) is tried again only when it may have appeared: a directory was created in
        a watched one, a watch went away, or a wait ended without an event (a periodic re-read)."""
        if directories != self._wanted:
            self._wanted = frozenset(directories)
            self._recheck = True
        if not self._recheck:
            return
        self._recheck = False
        for directory in self._wanted - set(self._watched.values()):
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(directory), _MASK)
            if wd >= 0:
                self._watched[wd] = directory
                self._unwatchable.discard(directory)
                continue
            err = ctypes.get_errno()
            # ENOENT, ENOTDIR: not (or no longer) a directory, nothing to see
            if err not in (errno.ENOENT, errno.ENOTDIR) and directory not in self._unwatchable:
                self._unwatchable.add(directory)
                _log.warning(
                    "cannot watch %s for changes (%s): records there arrive with the periodic re-read only%s",
                    directory,
                    os.strerror(err),
                    "; raise fs.inotify.max_user_watches" if err == errno.ENOSPC else "",
                )

    async def wait(self) -> None:
        if self._drain():
            return
        ready = self._registered()
        if ready is None:
            try:
                await anyio.wait_readable(self._fd)
            finally:
                self._woken(self._drain())
            return
        try:
            if not ready.is_set():  # set: events came (and were drained) since the last wait
                await ready.wait()
        finally:
            self._woken(ready.is_set())
            ready.clear()

    def _woken(self, by_events: bool) -> None:
        if not by_events:  # a timeout or the caller ended the wait: look around again
            self._recheck = True

    def _on_readable(self) -> None:
        # Drained here, in the loop's callback: the loop may run it once more for a readiness it
        # saw before we drained, and that must not wake the waiter for nothing.
        if self._drain() and self._ready is not None:
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
                pos += _EVENT.size + length
                if mask & _IN_IGNORED:  # forget it, so `watch` adds the directory again if it returns
                    self._watched.pop(wd, None)
                    self._recheck = True
                elif mask & _IN_ISDIR and mask & _IN_ARRIVED:  # maybe one we wait for
                    self._recheck = True
            if len(data) + _MAX_EVENT <= _BUFFER:  # the queue was empty: no read just to hear so
                return True

    def close(self) -> None:
        if self._fd >= 0:
            self._unregister()
            os.close(self._fd)
            self._fd = -1


def make_watcher(*, force_polling: bool = False) -> Watcher:
    if not force_polling:
        try:
            return InotifyWatcher()
        except (OSError, AttributeError) as exc:  # not Linux, or inotify limits reached: poll instead
            _log.warning(
                "inotify unavailable (%s): transcripts are re-read periodically, records arrive later", exc
            )
    return PollingWatcher()
