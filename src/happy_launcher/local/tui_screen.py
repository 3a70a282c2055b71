"""The TUI's screen as a terminal emulator (pyte) draws it, for the few moments an injection
needs to read it (`tui_input.box_text`, `dialog_open`).

pyte takes about 1.3 µs per byte: following every byte of a session would slow the terminal
(the output pump must stay quick), so the screen is kept only while it is `start`ed. It then
starts blank; Claude draws it whole again after a size change (measured), which the caller
brings about (`local/injector.py`). The pump thread only queues chunks under a lock; they are
fed to the emulator when the lines are read.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyte


class TuiScreen:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._chunks: list[bytes] | None = None  # None: not kept
        self._screen: pyte.Screen | None = None
        self._stream: pyte.ByteStream | None = None
        self._outputs = 0

    def observe(self, chunk: bytes) -> None:
        """Every output chunk of the TUI (from the pump thread): kept only while started."""
        if self._chunks is None:
            return
        with self._lock:
            if self._chunks is not None:
                self._chunks.append(chunk)
                self._outputs += 1

    @property
    def outputs(self) -> int:
        """How many output chunks came while started: the TUI drew since a count was taken."""
        return self._outputs

    def start(self, rows: int, cols: int) -> None:
        import pyte  # ~50 ms: loaded by the first injection, not by every start of the TUI

        self._screen = pyte.Screen(cols, rows)
        self._stream = pyte.ByteStream(self._screen)
        with self._lock:
            self._chunks = []

    def stop(self) -> None:
        with self._lock:
            self._chunks = None
        self._screen = self._stream = None

    def lines(self, rows: int, cols: int) -> list[str]:
        """The screen's lines now, at the PTY's size (`rows`, `cols`); [] when not started."""
        screen, stream = self._screen, self._stream
        if screen is None or stream is None:
            return []
        with self._lock:
            chunks = self._chunks or []
            if self._chunks is not None:
                self._chunks = []
        if (screen.lines, screen.columns) != (rows, cols):
            screen.resize(rows, cols)
        for chunk in chunks:
            stream.feed(chunk)
        return list(screen.display)
