"""Private files in HAPPY_HOME_DIR: one way to write them, so no reader ever sees half of one and
none is ever readable by another user."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from happy_launcher.home.dirs import ensure_home


def write_private(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Replace `path` with `data` atomically (a temporary file renamed over it), mode 0600 whatever
    the umask, in a private (0700) directory. `durable`: synced to disk before the rename (for what
    cannot be made again, such as credentials). StoreError if the directory cannot be made,
    OSError if the file cannot be written (nothing is left behind)."""
    ensure_home(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o600)  # a leftover temporary file keeps its mode through O_TRUNC
            out.write(data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
