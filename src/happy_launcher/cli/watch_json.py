"""How `happy watch --json` prints: the envelope JSON lines exactly as stored. Apart from
cli/watch_print.py (rich), so that this path loads neither rich nor the wire's models."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from happy_launcher.control.wire import Event


class JsonLines:
    def envelope(self, seq: int, body: bytes) -> None:
        out = sys.stdout.buffer
        out.write(body + b"\n")
        out.flush()

    def event(self, event: Event) -> None:
        pass  # the envelope stream only
