"""The user's terminal: raw mode while a child owns the screen, and an exact restore afterwards.

`TerminalGuard` is the only place that changes the real terminal. It also watches the child's
output (`observe`) for the terminal modes a TUI turns on (alternate screen, bracketed paste, mouse
reporting, kitty keyboard flags, ...) so that, if the child dies without turning them off, the
user's shell is not left with an invisible cursor or a mouse that types escape sequences.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import termios
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Protocol

from happy_launcher.terminal.fdio import write_all

# termios attribute list as returned by termios.tcgetattr (iflag, oflag, cflag, lflag, ispeed,
# ospeed, cc); typeshed types it as list[Any].
TermAttrs = list[Any]

_DEFAULT_SIZE = (24, 80)

# DEC private modes (CSI ? n h / CSI ? n l) whose "on" state must not outlive the child.
_ALT_SCREEN_MODES = (1049, 1047, 47)  # in preferred order for leaving: 1049 also restores the cursor
_MOUSE_MODES = (1016, 1015, 1006, 1005, 1003, 1002, 1000)  # encodings first, then reporting
# bracketed paste, focus events, theme-change notifications, application cursor keys
_OTHER_MODES = (2004, 1004, 2031, 1)
_CURSOR_VISIBLE = 25  # tracked inverted: `?25l` hides the cursor
_TRACKED_MODES = frozenset((*_ALT_SCREEN_MODES, *_MOUSE_MODES, *_OTHER_MODES, _CURSOR_VISIBLE))

# The few CSI shapes that matter: private-prefixed mode set/reset, kitty keyboard stack ops and
# xterm's modifyOtherKeys (`CSI > 4 ; n m`). Plain SGR (`CSI … m`) has no prefix: never matched.
_CSI = re.compile(rb"\x1b\[([<=>?])([0-9;:]*)([hlum])")
_MODIFY_OTHER_KEYS = 4
# What a tracked sequence can look like when a chunk boundary cuts it short.
_PARTIAL_CSI = re.compile(rb"\x1b(?:\[(?:[<=>?][0-9;:]*)?)?")
_MAX_TAIL = 64  # longer "partial" sequences are not ones we track


class ModeTracker:
    """Follows the terminal modes a child program switched on, from its raw output bytes.

    `feed` is on the output hot path: a chunk without `ESC [` (and no pending partial sequence)
    costs one substring search plus a bounded look at its last bytes.
    """

    def __init__(self) -> None:
        self._modes: dict[int, bool] = {}
        # kitty keyboard protocol: the main and alternate screens keep independent flag stacks.
        self._kitty_depth = {False: 0, True: 0}
        self._kitty_base_set = {False: False, True: False}
        self._modify_other_keys = False
        self._tail = b""

    @property
    def in_alt_screen(self) -> bool:
        return any(self._modes.get(mode, False) for mode in _ALT_SCREEN_MODES)

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk if self._tail else chunk
        # One-byte needle: CPython searches it with memchr (~1 µs for 64 KiB); `b"\x1b[" in`
        # takes ~45 µs, a tenth of the pump's time on bulk output.
        if b"\x1b" in data:
            for match in _CSI.finditer(data):
                self._apply(match.group(1), match.group(2), match.group(3))
        self._tail = _incomplete_tail(data)

    def _apply(self, prefix: bytes, params: bytes, final: bytes) -> None:
        if final == b"m":
            numbers = _int_params(params)
            if prefix == b">" and numbers and numbers[0] == _MODIFY_OTHER_KEYS:
                self._modify_other_keys = len(numbers) > 1 and numbers[1] != 0
            return
        if prefix == b"?":
            if final != b"u":  # `CSI ? u` is a kitty flags query: nothing changes
                on = final == b"h"
                for mode in _int_params(params):
                    if mode in _TRACKED_MODES:
                        self._modes[mode] = on
            return
        if final != b"u":
            return
        screen = self.in_alt_screen
        numbers = _int_params(params)
        if prefix == b">":
            self._kitty_depth[screen] += 1
        elif prefix == b"<":
            self._kitty_depth[screen] = max(0, self._kitty_depth[screen] - (numbers[0] if numbers else 1))
        elif self._kitty_depth[screen] == 0:  # `CSI = flags ; mode u` edits the base entry
            flags = numbers[0] if numbers else 0
            mode = numbers[1] if len(numbers) > 1 else 1
            if mode != 3:  # mode 3 only clears bits: it can never leave anything on
                self._kitty_base_set[screen] = flags != 0 or (mode == 2 and self._kitty_base_set[screen])

    def reset_sequence(self) -> bytes:
        """The bytes that switch off every mode the child left on (empty if none)."""
        out: list[bytes] = []
        alt = self.in_alt_screen
        if alt:  # the alternate screen's kitty stack can only be popped while it is shown
            out.append(self._kitty_reset(screen=True))
        out += [b"\x1b[?%dl" % m for m in (*_MOUSE_MODES, *_OTHER_MODES) if self._modes.get(m)]
        if alt:
            leave = next(m for m in _ALT_SCREEN_MODES if self._modes.get(m))
            out.append(b"\x1b[?%dl" % leave)
        out.append(self._kitty_reset(screen=False))
        if self._modify_other_keys:
            out.append(b"\x1b[>4m")
        if self._modes.get(_CURSOR_VISIBLE) is False:
            out.append(b"\x1b[?25h")
        return b"".join(out)

    def _kitty_reset(self, *, screen: bool) -> bytes:
        out = b""
        if self._kitty_depth[screen]:
            out += b"\x1b[<%du" % self._kitty_depth[screen]
        if self._kitty_base_set[screen]:
            out += b"\x1b[=0;1u"
        return out


def _int_params(params: bytes) -> list[int]:
    # Sub-parameters (`:`) never occur in the modes we track; treat them like separators.
    return [int(p) for p in params.replace(b":", b";").split(b";") if p]


def _incomplete_tail(data: bytes) -> bytes:
    start = data.rfind(b"\x1b", max(0, len(data) - _MAX_TAIL))
    if start < 0 or not _PARTIAL_CSI.fullmatch(data, start):
        return b""
    return data[start:]


def terminal_size(fd: int, *fallback_fds: int) -> tuple[int, int]:
    """(rows, cols) of the first fd that is a sized terminal, else $LINES/$COLUMNS, else 24x80."""
    for candidate in (fd, *fallback_fds):
        try:
            cols, rows = os.get_terminal_size(candidate)
        except OSError:
            continue
        if rows > 0 and cols > 0:
            return rows, cols
    return _env_int("LINES", _DEFAULT_SIZE[0]), _env_int("COLUMNS", _DEFAULT_SIZE[1])


def _env_int(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def raw_attrs(attrs: TermAttrs) -> TermAttrs:
    """cfmakeraw(3) applied to a copy of `attrs`.

    Output post-processing (OPOST) is switched off too: the child's own PTY already applied the
    post-processing the child asked for (a Node TUI keeps ONLCR, curses may drop it), so the outer
    terminal must pass those bytes through untouched instead of translating them a second time.
    """
    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = attrs
    iflag &= ~(
        termios.IGNBRK
        | termios.BRKINT
        | termios.PARMRK
        | termios.ISTRIP
        | termios.INLCR
        | termios.IGNCR
        | termios.ICRNL
        | termios.IXON
    )
    oflag &= ~termios.OPOST
    lflag &= ~(termios.ECHO | termios.ECHONL | termios.ICANON | termios.ISIG | termios.IEXTEN)
    cflag = (cflag & ~(termios.CSIZE | termios.PARENB)) | termios.CS8
    cc = list(cc)
    cc[termios.VMIN] = 1
    cc[termios.VTIME] = 0
    return [iflag, oflag, cflag, lflag, ispeed, ospeed, cc]


class SignalReceiver(Protocol):
    """Opens a receiver of `signals` for a `with` block: `anyio.open_signal_receiver`, or the
    run's (`session.run_signals`). Whoever holds the terminal raw catches them first, so none can
    end happy with the terminal left raw."""

    def __call__(self, *signals: signal.Signals) -> AbstractContextManager[AsyncIterator[signal.Signals]]: ...


class TerminalGuard:
    """Raw mode on `stdin_fd` (if it is a TTY) for the duration of the `with` block.

    On exit, on every path, it writes the resets for modes the child left on (only if `stdout_fd`
    is a TTY) and restores the saved termios exactly.
    """

    def __init__(self, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
        self._stdin_fd = stdin_fd
        self._stdout_fd = stdout_fd
        self._saved: TermAttrs | None = None
        self.tracker = ModeTracker()

    @property
    def saved_attrs(self) -> TermAttrs | None:
        """The user's terminal settings from before raw mode (None when stdin is not a TTY)."""
        return self._saved

    def observe(self, chunk: bytes) -> None:
        """Feed child output to the mode tracker (called from the output pump thread)."""
        self.tracker.feed(chunk)

    def __enter__(self) -> TerminalGuard:
        if os.isatty(self._stdin_fd):
            saved = termios.tcgetattr(self._stdin_fd)
            # TCSADRAIN, not TCSAFLUSH: keystrokes typed ahead while we start belong to the child.
            _set_attrs(self._stdin_fd, termios.TCSADRAIN, raw_attrs(saved))
            self._saved = saved
        return self

    def reacquire(self) -> None:
        """Raw mode again after we were stopped: on the settings the terminal has now if restore()
        gave it back (the user may have changed them meanwhile), else on the saved ones (a shell
        puts its own settings back whenever a job stops)."""
        if not os.isatty(self._stdin_fd):
            return
        with contextlib.suppress(termios.error, OSError):  # the terminal is gone: SIGHUP follows
            saved = self._saved if self._saved is not None else termios.tcgetattr(self._stdin_fd)
            _set_attrs(self._stdin_fd, termios.TCSADRAIN, raw_attrs(saved))
            self._saved = saved

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.restore()

    def restore(self) -> None:
        """Idempotent: reset leftover modes, then put the saved termios back."""
        resets = self.tracker.reset_sequence()
        self.tracker = ModeTracker()
        if resets and os.isatty(self._stdout_fd):
            # The terminal may already be gone (hangup): restoring is best effort from here on.
            with contextlib.suppress(OSError):
                write_all(self._stdout_fd, resets)
        saved, self._saved = self._saved, None
        if saved is not None:
            # TCSAFLUSH drains our output first and drops replies to queries the child sent just
            # before exiting, which would otherwise show up as garbage at the shell prompt.
            with contextlib.suppress(termios.error, OSError):
                _set_attrs(self._stdin_fd, termios.TCSAFLUSH, saved)


def _set_attrs(fd: int, when: int, attrs: TermAttrs) -> None:
    # TCSADRAIN/TCSAFLUSH wait for output to drain, and a signal (SIGCHLD, SIGWINCH) interrupts
    # that wait with EINTR, which the termios module does not retry.
    while True:
        try:
            termios.tcsetattr(fd, when, attrs)
        except termios.error as exc:
            if exc.args[0] != errno.EINTR:
                raise
        else:
            return
