"""Waiting for changes in transcript directories: inotify on Linux, polling elsewhere.

inotify wakes the scanner within a millisecond of Claude's write and costs nothing while idle;
watchfiles was not used because it delivers changes in batches at least `step` ms apart.
"""

from __future__ import annotations

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
        self._unwatchable: set[Path] = set()  # failed and logged; retried on every call

    def watch(self, directories: Set[Path]) -> None:
        for directory in directories - set(self._watched.values()):
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
        if not self._drain():
            await anyio.wait_readable(self._fd)
            self._drain()

    def _drain(self) -> bool:
        """Consume queued events (the scanner re-reads by offset); True if there were any."""
        got = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return got
            got = True
            pos = 0
            while pos + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
                pos += _EVENT.size + length
                if mask & _IN_IGNORED:  # forget it, so `watch` adds the directory again if it returns
                    self._watched.pop(wd, None)

    def close(self) -> None:
        if self._fd >= 0:
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
