"""The remote-mode screen's live region as lines, sans-IO: `compose` lays out what is open in the
transcript, the streamed preview, the turn's progress, the oldest permission prompt, the input
line, key hints and the status line, within the terminal's height."""

from __future__ import annotations

import orjson

from happy_launcher.remote.screen_keys import KeyController
from happy_launcher.remote.screen_model import Line, Transcript, format_duration
from happy_launcher.remote.screen_types import StatusInfo
from happy_launcher.session.ports import PermissionRequest

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPIN_MS = 250  # one spinner frame; the screen redraws this often while a turn runs
PARTIAL_ROWS = 4  # the streamed preview shows its last rows only
INPUT_ROWS = 3  # a long input line shows its last rows only
_ARGS_PREVIEW = 200

IDLE_HINT = "Enter send · Ctrl-C twice exit · Ctrl-T or Space twice: local mode"
BUSY_HINT = "Enter send · Ctrl-C interrupt · Ctrl-T local mode"
EXIT_HINT = "Press Ctrl-C again to exit"
PROMPT_HINT = "y allow · n deny · a deny and stop"


def compose(
    transcript: Transcript, keys: KeyController, status: StatusInfo, *, now: int, rows: int
) -> list[Line]:
    """The live region, top to bottom, for a terminal `rows` high at `now` (Unix ms)."""
    bottom: list[Line] = []
    started = transcript.turn_started
    if transcript.turn is not None:
        bottom.append(_working(now, started, interrupting=keys.interrupting(transcript.turn)))
    if keys.prompts:
        bottom += _prompt_lines(keys.prompts[0], waiting=len(keys.prompts) - 1)
    bottom.append(Line("input", keys.buffer, "❯"))
    bottom.append(Line("hint", _hint(keys, transcript, now)))
    bottom.append(status_line(status))
    partial = transcript.partial_text
    middle = [Line("partial", partial)] if partial else []
    reserved = len(bottom) - 1 + INPUT_ROWS + (PARTIAL_ROWS if partial else 0)
    body = _fit(transcript.live_lines(), max(1, rows - reserved - 1))
    return [*body, *middle, *bottom]


def status_line(status: StatusInfo) -> Line:
    parts = ["remote", f"happy {status.happy_session}"]
    if status.claude_session:
        parts.append(f"claude {status.claude_session}")
    if status.model:
        parts.append(status.model)
    return Line("status", " · ".join(parts))


def _working(now: int, started: int | None, *, interrupting: bool) -> Line:
    text = "Interrupting…" if interrupting else "Working…"
    if started is not None:
        elapsed = max(0, now - started)
        # Whole seconds: a live tenth would change on every frame.
        text += f" {elapsed // 1000}s" if elapsed < 60_000 else f" {format_duration(elapsed)}"
    return Line("working", text, SPINNER[now // SPIN_MS % len(SPINNER)])


def _prompt_lines(prompt: PermissionRequest, *, waiting: int) -> list[Line]:
    hint = PROMPT_HINT + (f" · {waiting} more waiting" if waiting else "")
    return [
        Line("permission", f"Allow {prompt.tool}: {describe(prompt)}?", "?"),
        Line("hint", hint, depth=1),
    ]


def describe(prompt: PermissionRequest) -> str:
    """What the tool is about to do, on one line: its title, else the start of its input."""
    title = " ".join(prompt.title.split())
    if title:
        return title
    try:
        text = orjson.dumps(prompt.input, default=str).decode()
    except TypeError:  # beyond what orjson can write (an integer over 64 bits): repr still says it
        text = repr(prompt.input)
    return text[:_ARGS_PREVIEW]


def _hint(keys: KeyController, transcript: Transcript, now: int) -> str:
    if keys.exit_armed(now):
        return EXIT_HINT
    return BUSY_HINT if transcript.turn is not None else IDLE_HINT


def _fit(lines: list[Line], budget: int) -> list[Line]:
    if len(lines) <= budget:
        return lines
    shown = lines[len(lines) - budget + 1 :] if budget > 1 else []
    return [Line("more", f"… {len(lines) - len(shown)} more lines above"), *shown]
