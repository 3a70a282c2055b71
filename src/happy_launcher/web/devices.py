"""The devices paired with `happy web`: one revocable token each, kept in
`<HAPPY_HOME_DIR>/web/devices.json` (0600). Only a hash of each token is stored, so the file
alone lets nobody in. The server reloads the file when it changes, so `happy web revoke` takes
effect at once on a running server."""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import orjson

from happy_launcher.errors import StoreError, UsageError
from happy_launcher.home.dirs import ensure_home
from happy_launcher.home.files import write_private

FILE_NAME = "devices.json"
SEEN_EVERY_MS = 60_000  # last use is written at most this often per device


@dataclass(frozen=True, slots=True)
class Device:
    id: str
    name: str
    token_hash: str
    created_at: int  # ms since the epoch
    last_seen: int


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class DeviceStore:
    def __init__(self, home: Path, *, clock_ms: Callable[[], int]) -> None:
        self._dir = home / "web"
        self._path = self._dir / FILE_NAME
        self._clock = clock_ms
        self._devices: list[Device] = []
        self._stamp: tuple[int, int] | None = None

    def devices(self) -> list[Device]:
        self._reload()
        return list(self._devices)

    def add(self, name: str) -> tuple[Device, str]:
        """A new device and its token (shown once: only its hash is kept)."""
        token = secrets.token_urlsafe(32)
        now = self._clock()
        device = Device(secrets.token_hex(4), _clean(name), _hash(token), now, now)
        with self._locked():
            self._save([*self._devices, device])
        return device, token

    def verify(self, token: str | None) -> Device | None:
        """The device holding `token`, or None (missing, wrong or revoked)."""
        if not token:
            return None
        self._reload()
        wanted = _hash(token)
        for device in self._devices:
            if hmac.compare_digest(device.token_hash, wanted):
                self._seen(device)
                return device
        return None

    def verify_id(self, device_id: str) -> bool:
        """Whether the device is still paired (an open stream of a revoked one is closed)."""
        self._reload()
        return any(d.id == device_id for d in self._devices)

    def revoke(self, prefix: str) -> Device:
        with self._locked():
            return self._revoke(prefix)

    def _revoke(self, prefix: str) -> Device:
        matches = [d for d in self._devices if d.id.startswith(prefix) or d.name == prefix]
        if len(matches) != 1:
            why = "no device" if not matches else f"{len(matches)} devices"
            raise UsageError(f"{why} match {prefix!r}: `happy web devices` lists them")
        self._save([d for d in self._devices if d is not matches[0]])
        return matches[0]

    def _seen(self, device: Device) -> None:
        now = self._clock()
        if now - device.last_seen < SEEN_EVERY_MS:
            return
        with self._locked():  # as read now: a revocation made meanwhile stays made
            self._save([replace(d, last_seen=now) if d.id == device.id else d for d in self._devices])

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Read-modify-write under a lock shared by the server and `happy web revoke`."""
        ensure_home(self._dir)
        fd = os.open(self._dir / "devices.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._reload()
            yield
        finally:
            os.close(fd)

    def _reload(self) -> None:
        try:
            st = self._path.stat()
        except FileNotFoundError:
            self._devices, self._stamp = [], None
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        try:
            rows = orjson.loads(self._path.read_bytes())
            self._devices = [Device(**row) for row in rows]
        except (OSError, ValueError, TypeError) as exc:
            raise StoreError(
                f"{self._path} is unreadable ({exc}): delete it and pair your devices again"
            ) from None
        self._stamp = stamp

    def _save(self, devices: list[Device]) -> None:
        write_private(self._path, orjson.dumps([asdict(d) for d in devices], option=orjson.OPT_INDENT_2))
        self._devices = devices
        st = self._path.stat()
        self._stamp = (st.st_mtime_ns, st.st_size)


def _clean(name: str) -> str:
    """A device name as shown in listings: printable, one line, short."""
    printable = "".join(ch for ch in name if ch.isprintable()).strip()
    return printable[:60] or "device"
