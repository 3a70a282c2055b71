"""happy_launcher: run Claude Code as `happy claude` and mirror the session as a flat session
protocol. The Python API (`open_session`, `run`) is loaded on first use, so the CLI's start-up
does not pay for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from happy_launcher.version import __version__

if TYPE_CHECKING:
    from happy_launcher.api import PermissionAnswer, RemoteSession, open_session, run

__all__ = ["PermissionAnswer", "RemoteSession", "__version__", "open_session", "run"]


def __getattr__(name: str) -> Any:
    if name in ("PermissionAnswer", "RemoteSession", "open_session", "run"):
        from happy_launcher import api

        return getattr(api, name)
    raise AttributeError(f"module 'happy_launcher' has no attribute {name!r}")
