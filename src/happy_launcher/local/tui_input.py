"""Typing a message into Claude's live TUI, sans-IO (switching-facts §4 and design (c)): what
may be typed, the writes it is typed in, and what the screen says about the input box.

- One write of 800 characters or more becomes `[Pasted text #N]` and its Enter does not submit;
  writes of at most 100 characters some 20 ms apart are taken as typing (measured), so a message
  goes in chunks of `CHUNK` characters, then Enter (`\\r`) as a write of its own.
- A newline inside the message is Ctrl-J (`\\n`), which the TUI takes as a new line of the same
  prompt; a `\\r` would submit, and other control characters are keys (Esc, Ctrl-C, Tab…), so a
  message holding them is not typed.
- The screen (a terminal emulator's lines, `tui_screen.py`) shows the input box as a `❯` line
  right below a rule of `─`, continued by indented lines down to the next rule. While a dialog
  is up there is no such box (its `❯` marks the chosen answer, under a different frame).
"""

from __future__ import annotations

from collections.abc import Sequence

CHUNK = 100  # characters per write (measured: 100-character writes 20 ms apart are typing)
CHUNK_GAP = 0.02  # seconds between writes
ENTER = b"\r"
STASH = b"\x13"  # Ctrl-S: stash the draft; it comes back after the next submit
CLEAR_BOX = b"\x15" * 20 + b"\x0b" * 20  # Ctrl-U x20, Ctrl-K x20: any box empty, placeholders too
PASTE_MARK = "[Pasted text #"
PROMPT_MARK = "❯"
RULE = "─"
DIALOG_MARKERS = ("Do you want to proceed?",)


def normalized(text: str) -> str:
    """The message as it will be typed: line ends as `\\n` (a `\\r` would submit)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def inject_problem(text: str) -> str | None:
    """Why `text` cannot be typed into the TUI (None: it can)."""
    keys = sorted({f"U+{ord(c):04X}" for c in normalized(text) if _is_key(c)})
    if keys:
        return (
            f"the message holds control characters ({', '.join(keys[:5])}) that the TUI would take "
            "as keys: send it without --inject (happy send --switch)"
        )
    return None


def _is_key(c: str) -> bool:
    code = ord(c)
    return (code < 0x20 and c != "\n") or code == 0x7F or 0x80 <= code < 0xA0


def typing_chunks(text: str, size: int = CHUNK) -> list[bytes]:
    """The writes that type `text` (normalized) as a user would, Enter not included."""
    text = normalized(text)
    return [text[i : i + size].encode() for i in range(0, len(text), size)]


def box_text(lines: Sequence[str]) -> str | None:
    """The input box's text (\"\" when empty), or None when no input box shows (a dialog is up,
    or the TUI is not drawn yet). Taken from the lowest box on the screen."""
    for top in range(len(lines) - 2, -1, -1):
        if not _is_rule(lines[top]) or not lines[top + 1].startswith(PROMPT_MARK):
            continue
        body: list[str] = []
        for line in lines[top + 1 :]:
            if _is_rule(line):
                return "\n".join(body).strip()
            body.append(line[len(PROMPT_MARK) :].strip() if not body else line.strip())
        return None  # no closing rule: not (yet) an input box
    return None


def pasted(lines: Sequence[str]) -> bool:
    """The TUI took input as a paste: its placeholder shows (its Enter would not submit it as
    typed, and the prompt would be wrapped in `<pasted_content>`)."""
    return any(PASTE_MARK in line for line in lines)


def dialog_open(lines: Sequence[str]) -> bool:
    """A permission dialog shows (an Enter now would answer it)."""
    return any(marker in line for line in lines for marker in DIALOG_MARKERS)


def _is_rule(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 10 and set(stripped) == {RULE}
