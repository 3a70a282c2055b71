"""A tiny stand-in for a TUI, run under the PTY by tests/unit/local/test_pty_passthrough.py.

`child.py MODE [ARG]`; every mode puts its PTY in raw mode first (like a real TUI), so the bytes
it reads and writes are exactly the bytes that crossed our pass-through layer. Handshake lines
carry the pass-through's pid (our grandparent: the PTY's session leader sits in between) and the
child's own pid, so the tests can signal the one and watch the other.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sys
import termios
from pathlib import Path
from types import FrameType

_STDIN, _STDOUT = 0, 1
_END_OF_INPUT = b"\x04\x04\x04"


def make_raw() -> None:
    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = termios.tcgetattr(_STDIN)
    iflag &= ~(termios.BRKINT | termios.ICRNL | termios.INLCR | termios.IGNCR | termios.ISTRIP | termios.IXON)
    oflag &= ~termios.OPOST
    lflag &= ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN)
    cc[termios.VMIN], cc[termios.VTIME] = 1, 0
    termios.tcsetattr(_STDIN, termios.TCSANOW, [iflag, oflag, cflag, lflag, ispeed, ospeed, cc])


def out(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(_STDOUT, view) :]


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def hello(tag: str) -> None:
    out(f"{tag} {parent_of(os.getppid())} {os.getpid()}\r\n".encode())


def block_forever() -> None:
    while os.read(_STDIN, 1024):
        pass


def echo_hex() -> int:
    """Print the hex of every read until the input ends with three ^D."""
    hello("READY")
    received = b""
    while not received.endswith(_END_OF_INPUT):
        chunk = os.read(_STDIN, 4096)
        received += chunk
        out(chunk.hex().encode() + b"\r\n")
    return 0


def read_then_wait(count: int) -> int:
    hello("READY")
    received = b""
    while len(received) < count:
        received += os.read(_STDIN, count - len(received))
    out(b"GOT " + received.hex().encode() + b"\r\n")
    hello("WAIT")
    block_forever()
    return 0


def report_sizes() -> int:
    def report(_sig: int = 0, _frame: FrameType | None = None) -> None:
        cols, rows = os.get_terminal_size(_STDIN)
        out(f"SIZE {rows} {cols}\r\n".encode())

    signal.signal(signal.SIGWINCH, report)
    report()
    os.read(_STDIN, 1)
    return 0


def flood(size: int) -> int:
    data = random.Random(1234).randbytes(size)
    out(b"START\r\n")
    out(data)
    out(b"\r\nDONE " + hashlib.sha256(data).hexdigest().encode() + b"\r\n")
    return 0


def leave_modes_on(exit_on_interrupt: int) -> int:
    """Switch modes on and wait; with a non-zero arg, SIGINT or SIGQUIT ends it with exit status 0
    (as SIGINT does Claude)."""
    if exit_on_interrupt:
        for sig in (signal.SIGINT, signal.SIGQUIT):
            signal.signal(sig, lambda _sig, _frame: os._exit(0))
    # alternate screen, kitty keyboard push (on the alternate screen), bracketed paste, hidden cursor
    out(b"\x1b[?1049h\x1b[>1u\x1b[?2004h\x1b[?25l")
    hello("MODES-ON")
    block_forever()
    return 0


def suspend_on_z(stop_signal: int) -> int:
    """Like Claude on Ctrl-Z: on a "z", stop our process group with `stop_signal`; once continued,
    report the window size. The hex of other input is printed; three ^D end it. Modes switched on
    at the start stay on while stopped: the pass-through must reset them for the shell."""
    out(b"\x1b[?1049h\x1b[?2004h")
    hello("READY")
    received = b""
    while not received.endswith(_END_OF_INPUT):
        chunk = os.read(_STDIN, 4096)
        if chunk != b"z":
            received += chunk
            out(chunk.hex().encode() + b"\r\n")
            continue
        hello("SUSPENDING")
        os.kill(0, stop_signal)
        cols, rows = os.get_terminal_size(_STDIN)
        out(f"RESUMED {rows} {cols}\r\n".encode())
    return 0


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # die of SIGINT like a C program would
    make_raw()
    mode, arg = argv[0], int(argv[1]) if len(argv) > 1 else 0
    if mode == "exit":
        out(b"BYE\r\n")
        return arg
    if mode == "kill9":
        os.kill(os.getpid(), signal.SIGKILL)
    modes = {"hex": echo_hex, "sizes": report_sizes}
    if mode in modes:
        return modes[mode]()
    if mode == "modes":
        return leave_modes_on(arg)
    if mode == "suspend":
        return suspend_on_z(arg)
    return read_then_wait(arg) if mode == "read" else flood(arg)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
