"""Where the control sockets live and how they are made private: `<home>/control/` (0700) holds
one `<pid>.sock` (0600) per running launcher. Only our own uid may talk to them: the modes keep
everyone else out, and the server checks each peer's uid as well (SO_PEERCRED).

A Unix socket path is limited to 107 bytes, and `HAPPY_HOME_DIR` may be deeper than that: such a
path is reached through `/proc/self/fd/<fd of its directory>/<name>`, which is always short."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from happy_launcher.errors import StoreError
from happy_launcher.home.dirs import SOCKET_SUFFIX as SUFFIX
from happy_launcher.home.dirs import control_dir, ensure_home
from happy_launcher.home.procs import running

if TYPE_CHECKING:
    import socket

_MAX_SUN_PATH = 107  # sockaddr_un.sun_path is 108 bytes, NUL included


def live_sockets(home: Path) -> dict[int, Path]:
    """Every `<pid>.sock` in the control directory, by pid (alive or not: the caller checks)."""
    found: dict[int, Path] = {}
    with contextlib.suppress(OSError):  # no directory yet: no sockets
        for entry in control_dir(home).iterdir():
            stem = entry.name.removesuffix(SUFFIX)
            if entry.name.endswith(SUFFIX) and stem.isdigit():
                found[int(stem)] = entry
    return found


@contextlib.contextmanager
def short_path(path: Path) -> Iterator[str]:
    """A path to `path` that fits in a socket address, valid inside the `with`."""
    text = os.fsencode(path)
    if len(text) <= _MAX_SUN_PATH:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def make_control_dir(home: Path) -> Path:
    """`<home>/control`, created 0700 (and tightened to it: it guards the sockets)."""
    directory = control_dir(ensure_home(home))
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        directory.chmod(0o700)
    except OSError as exc:
        raise StoreError(
            f"cannot create {directory} ({exc.strerror or exc}): check the permissions of {home}"
        ) from exc
    return directory


def bind_private(path: Path) -> socket.socket:
    """A listening socket at `path`, mode 0600 from the moment it has that name: it is bound
    under a temporary name, chmod-ed, then renamed over whatever `path` held (the socket of an
    earlier process that had our pid)."""
    import socket  # here: listing the sockets (`happy watch`, `happy sessions`) needs none of it

    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        with short_path(temp) as address:
            sock.bind(address)
        temp.chmod(0o600)
        temp.replace(path)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        with contextlib.suppress(OSError):
            temp.unlink()
        raise StoreError(f"cannot serve the control socket {path} ({exc.strerror or exc})") from exc
    return sock


def remove_dead(home: Path) -> None:
    """Remove the sockets of launchers that are gone (a crash leaves its socket behind)."""
    for pid, path in live_sockets(home).items():
        if not running(pid):
            with contextlib.suppress(OSError):
                path.unlink()


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected Unix socket."""
    import socket
    import struct

    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)
