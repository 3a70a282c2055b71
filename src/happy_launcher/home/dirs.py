"""Where happy keeps its state: `HAPPY_HOME_DIR`, else `~/.happy` (design §5)."""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from pathlib import Path

from happy_launcher.errors import StoreError

HOME_ENV = "HAPPY_HOME_DIR"
DEFAULT_DIR_NAME = ".happy"
RUN_DIR_NAME = "run"
CONTROL_DIR_NAME = "control"
SETTINGS_DIR_NAME = "settings"
SOCKET_SUFFIX = ".sock"
# Happy's credentials (bridge/keys/credentials.py): named here so that `happy claude` can see whether
# this machine is logged in with a stat, without loading the bridge.
ACCESS_KEY = "access.key"


def happy_home(env: Mapping[str, str]) -> Path:
    """The happy home directory named by `env` (not created; see `ensure_home`).

    `env` is passed in rather than read from `os.environ` so callers and tests control it.
    A leading `~` is expanded with `env["HOME"]`, because a value from a config or `.env`
    file reaches us unexpanded by any shell.
    """
    explicit = env.get(HOME_ENV, "")
    if explicit:
        return _expand_user(explicit, env)
    home = env.get("HOME", "")
    if not home:
        raise StoreError(f"HOME is not set: set {HOME_ENV} to the directory where happy keeps its sessions")
    return Path(home) / DEFAULT_DIR_NAME


def _expand_user(value: str, env: Mapping[str, str]) -> Path:
    if value != "~" and not value.startswith("~/"):
        return Path(value)
    home = env.get("HOME", "")
    if not home:
        raise StoreError(f"{HOME_ENV}={value} starts with ~ but HOME is not set: use an absolute path")
    return Path(home) / value[2:]


def ensure_home(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700 if missing; return it.

    An existing directory keeps its mode: it may be a directory the user shares on purpose
    (`HAPPY_HOME_DIR=/some/dir`), and silently tightening it would surprise them. The files
    happy creates inside are 0600 on their own.
    """
    existed = path.is_dir()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not existed:
            path.chmod(0o700)  # mkdir's mode is masked by the umask; ours must be exactly 0700
    except FileExistsError as exc:
        raise StoreError(
            f"happy home {path} exists but is not a directory: remove it or set {HOME_ENV} "
            "to another directory"
        ) from exc
    except OSError as exc:
        raise StoreError(_unusable(path, exc)) from exc
    if not path.is_dir():  # e.g. a dangling symlink that mkdir(exist_ok) accepted
        raise StoreError(f"happy home {path} is not a directory: set {HOME_ENV} to a directory")
    return path


def _unusable(path: Path, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        return f"cannot write in happy home {path}: the disk is full; free some space or set {HOME_ENV}"
    return (
        f"cannot write in happy home {path} ({reason}): check its permissions (and its parent's) "
        f"or set {HOME_ENV} to a writable directory"
    )


def run_dir(home: Path) -> Path:
    """`<home>/run` (0700), where each run keeps its private files, after a real write in it:
    a home that is read-only, full or not a real directory (`/proc/self`) fails here with a
    StoreError, before Claude starts, rather than halfway through a session."""
    path = home / RUN_DIR_NAME
    probe = path / f".probe-{os.getpid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        probe.mkdir(mode=0o700, exist_ok=True)
        probe.rmdir()
    except OSError as exc:
        raise StoreError(_unusable(home, exc)) from exc
    return path


def settings_dir(home: Path) -> Path:
    """Where each run's `--settings` overlay stays after the run: Claude's resume hint names it."""
    return home / SETTINGS_DIR_NAME


def control_dir(home: Path) -> Path:
    """Where the running launchers' control sockets are (see `control_socket.py`)."""
    return home / CONTROL_DIR_NAME


def socket_path(home: Path, pid: int) -> Path:
    """The control socket of the launcher with process id `pid` (light: known before Claude is
    spawned, for the PermissionRequest hook's command)."""
    return control_dir(home) / f"{pid}{SOCKET_SUFFIX}"
