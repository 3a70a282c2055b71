"""The sessions hidden from the page's list, kept in `HAPPY_HOME_DIR/web/hidden.json` (0600) so
that every paired device sees the same list (docs/decisions.md). Only an ended session can be
hidden; one that runs again is shown again, and stays shown when it ends (its id is dropped)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import orjson

from happy_launcher.home.files import write_private

_log = logging.getLogger(__name__)


class HiddenSessions:
    """`path`: where the set is kept (None: in memory only)."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._ids: set[str] = set()
        if path is not None:
            try:
                self._ids = {str(i) for i in orjson.loads(path.read_bytes())}
            except FileNotFoundError:
                pass
            except (OSError, ValueError, TypeError) as exc:  # the list just shows them all
                _log.warning("%s is unreadable (%s): no session is hidden", path, exc)

    def hidden(self, running: Iterable[str]) -> frozenset[str]:
        """The hidden ids, once those of `running` sessions are dropped from the set."""
        back = self._ids.intersection(running)
        if back:
            self._ids -= back
            self._save()
        return frozenset(self._ids)

    def set(self, session_id: str, hidden: bool) -> None:
        if (session_id in self._ids) == hidden:
            return
        if hidden:
            self._ids.add(session_id)
        else:
            self._ids.discard(session_id)
        self._save()

    def _save(self) -> None:
        if self._path is None:
            return
        try:
            write_private(self._path, orjson.dumps(sorted(self._ids)))
        except OSError as exc:  # the list is right for this server's life; a restart shows them
            _log.warning("could not keep the hidden sessions in %s: %s", self._path, exc)
