"""How `happy watch` prints without `--json`: one readable line per envelope (rich; what the
session holds is shown as text, see terminal/plain_text.py). `--json` prints with
cli/watch_json.py, which loads none of this."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from rich.console import Console
from rich.text import Text

from happy_launcher.cli.errors import discard_stdout
from happy_launcher.control.wire import Event, PermissionRequested, PermissionSettled
from happy_launcher.terminal.plain_text import as_text, plain_console

_STYLES = {"user": "bold cyan", "agent": "green"}
# How a tool call that did not succeed ends its line (`tool-call-end.status`; absent: it did).
_TOOL_ENDS = {"failed": "✗ tool failed", "denied": "✗ tool denied", "cancelled": "tool cancelled"}


class Pretty:
    def __init__(self, console: Console | None = None) -> None:
        self._console = console or plain_console()
        self._console.on_broken_pipe = _closed  # type: ignore[method-assign]

    def envelope(self, seq: int, body: bytes) -> None:
        data: dict[str, Any] = orjson.loads(body)
        ev = data.get("ev", {})
        when = datetime.fromtimestamp(data.get("time", 0) / 1000).strftime("%H:%M:%S")
        role = str(data.get("role", "?"))
        shown = role + (" (subagent)" if data.get("subagent") else "")
        line = Text.assemble((f"{when} ", "dim"), as_text(f"{shown:<8} ", _STYLES.get(role, "")))
        self._print(line.append_text(as_text(_describe(ev))))

    def event(self, event: Event) -> None:
        if isinstance(event, PermissionRequested):
            request = event.request
            where = ", the TUI asks too" if request.origin == "local" else ""
            about = as_text(f"{request.title} ({request.tool}, id {request.id}{where})")
            self._print(Text.assemble(("permission requested", "yellow"), " ", about))
        elif isinstance(event, PermissionSettled):
            about = as_text(f"(id {event.request_id})")
            self._print(Text.assemble((f"permission {event.outcome}", "yellow"), " ", about))

    def _print(self, line: Text) -> None:
        self._console.print(line, soft_wrap=True)


def _closed() -> None:
    """The reader went away (`happy watch | head`): the verb ends as with --json, exit 0 (rich's
    own handler exits 1)."""
    discard_stdout()
    raise BrokenPipeError


def _describe(ev: dict[str, Any]) -> str:
    kind = ev.get("t", "?")
    if kind == "text":
        return ("(thinking) " if ev.get("thinking") else "") + str(ev.get("text", ""))
    if kind == "service":
        return f"[service] {ev.get('text', '')}"
    if kind == "tool-call-start":
        return f"→ {ev.get('name')}: {ev.get('title')}"
    if kind == "tool-call-end":
        status = ev.get("status")
        return "← tool done" if status is None else _TOOL_ENDS.get(str(status), f"← tool {status}")
    if kind == "turn-end":
        return f"turn {ev.get('status')}"
    if kind == "file":
        return f"file {ev.get('name')} ({ev.get('size')} bytes)"
    return str(kind)
