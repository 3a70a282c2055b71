"""The remote-mode screen's keyboard, sans-IO: raw terminal bytes in, keys out, keys to commands.

`KeyDecoder` turns what a raw-mode terminal sends into keys, one per character typed. Escape sequences
(arrows, function keys, Alt combinations) are dropped rather than typed as garbage; a bracketed
paste arrives as one `paste` key with its line breaks, so pasting several lines does not send
each of them, and pasted text never answers a permission prompt.

`KeyController` holds the input line and the queue of permission prompts, and decides what a key
means: while a prompt is waiting, y/n/a answer the oldest one; Ctrl-C interrupts a running turn,
else clears the input line, else must be pressed twice within `EXIT_WINDOW_MS` to exit. Ctrl-T,
or Space twice within `SWITCH_WINDOW_MS` on an empty input line (Happy's gesture), asks for local
mode; a space typed after text is just a space.
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from dataclasses import dataclass
from typing import Literal

from happy_launcher.remote.screen_types import ExitReason
from happy_launcher.session.ports import PermissionRequest

KeyName = Literal[
    "text", "paste", "enter", "backspace", "kill-line", "kill-word", "ctrl-c", "ctrl-d", "ctrl-t"
]

PASTE_ON = b"\x1b[?2004h"  # what the screen writes to have pastes bracketed
PASTE_OFF = b"\x1b[?2004l"
_PASTE_START = b"\x1b[200~"
_PASTE_END = b"\x1b[201~"
_CONTROL_KEYS: dict[int, KeyName] = {
    0x0D: "enter",
    0x0A: "enter",
    0x7F: "backspace",
    0x08: "backspace",
    0x15: "kill-line",
    0x17: "kill-word",
    0x03: "ctrl-c",
    0x04: "ctrl-d",
    0x14: "ctrl-t",
}
# CSI: parameters and intermediates, then a final byte; SS3: one byte; Alt+key: ESC + that key.
_ESCAPE = re.compile(rb"\x1b(?:\[[\x20-\x3f]*[\x40-\x7e]|O.|[^\[O])", re.DOTALL)
_INCOMPLETE_ESCAPE = re.compile(rb"\x1b(?:\[[\x20-\x3f]*|O)?")
_TEXT = re.compile(rb"[^\x00-\x1f\x7f]+")
_PASTE_JUNK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # controls other than tab and newline
MAX_INPUT = 100_000  # characters in the input line; a runaway paste is cut here

EXIT_WINDOW_MS = 3_000
SWITCH_WINDOW_MS = 15_000


@dataclass(frozen=True)
class Key:
    name: KeyName
    text: str = ""


class KeyDecoder:
    """Incremental: a sequence or a UTF-8 character cut by a read boundary completes on the next."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._tail = b""
        self._paste: bytearray | None = None  # inside a bracketed paste

    def feed(self, data: bytes) -> list[Key]:
        if self._tail == b"\x1b" and not data.startswith((b"[", b"O")):
            self._tail = b""  # it was the Escape key (unbound): Alt+key never comes in two reads
        data, self._tail = self._tail + data, b""
        keys: list[Key] = []
        pos = 0
        while pos < len(data):
            if self._paste is not None:
                pos = self._pasted(data, pos, keys)
                continue
            byte = data[pos]
            if byte == 0x1B:
                pos = self._escape(data, pos, keys)
            elif byte in _CONTROL_KEYS:
                name = _CONTROL_KEYS[byte]
                keys.append(Key(name))
                pos += 2 if data[pos : pos + 2] == b"\r\n" else 1
            elif byte == 0x09:
                keys.append(Key("text", " "))
                pos += 1
            elif (match := _TEXT.match(data, pos)) is not None:
                keys += (Key("text", char) for char in self._utf8.decode(match.group()))
                pos = match.end()
            else:  # another control byte: nothing we bind
                pos += 1
        return keys

    def _escape(self, data: bytes, pos: int, keys: list[Key]) -> int:
        if data.startswith(_PASTE_START, pos):
            self._paste = bytearray()
            return pos + len(_PASTE_START)
        match = _ESCAPE.match(data, pos)
        if match is not None:
            return match.end()
        if _INCOMPLETE_ESCAPE.fullmatch(data, pos):
            self._tail = data[pos:]  # cut by the read: the rest comes with the next one
        return len(data)

    def _pasted(self, data: bytes, pos: int, keys: list[Key]) -> int:
        assert self._paste is not None
        end = data.find(_PASTE_END, pos)
        if end < 0:
            keep = _partial_suffix(data, _PASTE_END)
            self._paste += data[pos : len(data) - keep]
            self._tail = data[len(data) - keep :]
            return len(data)
        self._paste += data[pos:end]
        text = bytes(self._paste).decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        self._paste = None
        text = _PASTE_JUNK.sub("", text.replace("\t", " "))
        if text:
            keys.append(Key("paste", text))
        return end + len(_PASTE_END)


def _partial_suffix(data: bytes, marker: bytes) -> int:
    """How many bytes at the end of `data` could start `marker`."""
    for size in range(min(len(marker) - 1, len(data)), 0, -1):
        if marker.startswith(data[-size:]):
            return size
    return 0


@dataclass(frozen=True)
class Send:
    text: str


@dataclass(frozen=True)
class Interrupt:
    pass


@dataclass(frozen=True)
class Answer:
    prompt: PermissionRequest
    allow: bool
    stop: bool = False


@dataclass(frozen=True)
class End:
    reason: ExitReason


Command = Send | Interrupt | Answer | End

_ANSWERS = {"y": (True, False), "n": (False, False), "a": (False, True)}


class KeyController:
    """The input line, the pending permission prompts, and what each key does with them."""

    def __init__(self, *, exit_window_ms: int = EXIT_WINDOW_MS) -> None:
        self.buffer = ""
        self._prompts: deque[PermissionRequest] = deque()
        self._exit_window = exit_window_ms
        self._armed_at: int | None = None  # the first Ctrl-C of a pair
        self._space_at: int | None = None  # the first Space of a pair, on an empty line
        self._interrupted: str | None = None  # the turn we asked to interrupt

    @property
    def prompts(self) -> tuple[PermissionRequest, ...]:
        return tuple(self._prompts)

    def add_prompt(self, prompt: PermissionRequest) -> None:
        if all(p.id != prompt.id for p in self._prompts):
            self._prompts.append(prompt)

    def drop_prompt(self, request_id: str) -> None:
        self._prompts = deque(p for p in self._prompts if p.id != request_id)

    def exit_armed(self, now: int) -> bool:
        return self._armed_at is not None and now - self._armed_at <= self._exit_window

    def exit_armed_for(self, now: int) -> int | None:
        """Milliseconds from `now` until a second Ctrl-C no longer exits (None: not armed)."""
        if self._armed_at is None or not self.exit_armed(now):
            return None
        return self._armed_at + self._exit_window - now + 1

    def interrupting(self, turn: str | None) -> bool:
        return turn is not None and self._interrupted == turn

    def feed(self, key: Key, *, now: int, turn: str | None) -> Command | None:
        """What `key` asks for, at `now` (ms), while `turn` runs (None when idle)."""
        if key.name == "ctrl-c":
            return self._ctrl_c(now, turn)
        if key.name == "ctrl-t":
            return End("switch")
        if self._prompts:
            return self._answer(key)
        if key.name == "text" and key.text and not key.text.strip(" ") and not self.buffer:
            return self._spaces(len(key.text), now)  # one read may hold both
        self._space_at = None
        return self._edit(key, turn)

    def _spaces(self, count: int, now: int) -> Command | None:
        for _ in range(count):
            if self._space_at is not None and now - self._space_at <= SWITCH_WINDOW_MS:
                self._space_at = None
                return End("switch")
            self._space_at = now
        return None

    def _ctrl_c(self, now: int, turn: str | None) -> Command | None:
        if turn is not None and self._interrupted != turn:
            self._interrupted = turn
            return Interrupt()
        if self.buffer:
            self.buffer = ""
            return None
        if self.exit_armed(now):
            return End("exit")
        self._armed_at = now
        return None

    def _answer(self, key: Key) -> Command | None:
        answer = _ANSWERS.get(key.text.lower()) if key.name == "text" else None
        if answer is None:  # keys go to the prompt, not to the input line, while it waits
            return None
        allow, stop = answer
        return Answer(self._prompts.popleft(), allow, stop)

    def _edit(self, key: Key, turn: str | None) -> Command | None:
        if key.name in ("text", "paste"):
            self.buffer = (self.buffer + key.text)[:MAX_INPUT]
        elif key.name == "backspace":
            self.buffer = self.buffer[:-1]
        elif key.name == "kill-line":
            self.buffer = ""
        elif key.name == "kill-word":
            self.buffer = self.buffer.rstrip()
            self.buffer = self.buffer[: self.buffer.rfind(" ") + 1]
        elif key.name == "enter":
            text, self.buffer = self.buffer.strip(), ""
            return Send(text) if text else None
        elif key.name == "ctrl-d" and not self.buffer and turn is None:
            return End("exit")
        return None
