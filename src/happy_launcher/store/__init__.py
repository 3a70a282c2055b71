"""The session store: a registry of sessions beside a database per session (docs/decisions.md)."""

from __future__ import annotations


def warn(message: str, *args: object) -> None:
    """A warning in happy's log. `logging` loads with the first one: a short command that reads
    the store (`happy watch` of an ended session) starts without it (~15 ms here)."""
    import logging

    logging.getLogger("happy_launcher.store").warning(message, *args)
