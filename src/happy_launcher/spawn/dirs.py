"""Where the app may start sessions on this machine, and how many at once: the directories the
user allowed (`happy daemon start --allow-dir DIR …`, default the home directory) and the limit,
kept in HAPPY_HOME_DIR (`spawn.json`, 0600) and read again at each request, so a change takes
effect without restarting the bridge. A requested directory is judged after resolving links and
`..`: a link inside an allowed directory that leads out of it is outside."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from happy_launcher.errors import DaemonError
from happy_launcher.home.files import write_private

SETTINGS_FILE = "spawn.json"
DEFAULT_LIMIT = 8


class SpawnRefused(Exception):
    """A spawn the machine does not make; the message says why, for the app to show."""


@dataclass(frozen=True, slots=True)
class SpawnSettings:
    allowed: tuple[Path, ...]
    limit: int = DEFAULT_LIMIT


@dataclass(frozen=True, slots=True)
class Place:
    """Where a session starts (`ready`), or a directory that does not exist yet and could be
    created if the request allowed it (`ask`)."""

    path: Path
    kind: Literal["ready", "ask"]


def read_settings(home: Path, user_home: Path) -> SpawnSettings:
    try:
        data = json.loads((home / SETTINGS_FILE).read_text())
        allowed = tuple(Path(p) for p in data["allowed"]) or (user_home,)
        return SpawnSettings(allowed, int(data.get("limit", DEFAULT_LIMIT)))
    except (OSError, ValueError, KeyError, TypeError):
        return SpawnSettings((user_home,))


def write_settings(home: Path, settings: SpawnSettings) -> None:
    data = {"allowed": [str(p) for p in settings.allowed], "limit": settings.limit}
    write_private(home / SETTINGS_FILE, json.dumps(data).encode())


def configure(home: Path, user_home: Path, allow_dirs: Sequence[str], limit: int | None) -> SpawnSettings:
    """`happy daemon start --allow-dir … --max-sessions N`: what was given replaces what was kept,
    the rest stays. Each directory must exist; it is kept resolved."""
    kept = read_settings(home, user_home)
    allowed = kept.allowed
    if allow_dirs:
        allowed = tuple(Path(d).expanduser().resolve() for d in allow_dirs)
        if missing := [str(d) for d in allowed if not d.is_dir()]:
            raise DaemonError(f"--allow-dir: no such directory: {', '.join(missing)}")
    if limit is not None and limit < 1:
        raise DaemonError(f"--max-sessions must be at least 1, not {limit}")
    settings = SpawnSettings(allowed, kept.limit if limit is None else limit)
    write_settings(home, settings)
    return settings


def place_for(requested: str, allowed: Sequence[Path], *, create: bool) -> Place:
    """The directory a session may start in, made if asked (and its parent is allowed); else
    SpawnRefused saying why."""
    if not Path(requested).is_absolute():
        raise SpawnRefused(f"not allowed: {requested} is not an absolute path")
    real = Path(requested).resolve()
    roots = [Path(a).resolve() for a in allowed]
    if real.exists():
        if not real.is_dir():
            raise SpawnRefused(f"not a directory: {requested}")
        _check_under(requested, real, roots)
        return Place(real, "ready")
    if not real.parent.is_dir():
        raise SpawnRefused(f"no such directory: {requested} (nor its parent)")
    _check_under(requested, real.parent, roots)
    if not create:
        return Place(real, "ask")
    try:
        real.mkdir()
    except OSError as exc:
        raise SpawnRefused(f"cannot create {requested}: {exc.strerror}") from None
    return Place(real, "ready")


def _check_under(requested: str, real: Path, roots: Sequence[Path]) -> None:
    if not any(real == root or root in real.parents for root in roots):
        shown = ", ".join(str(r) for r in roots)
        raise SpawnRefused(f"not allowed: {requested} is outside the directories allowed here ({shown})")
