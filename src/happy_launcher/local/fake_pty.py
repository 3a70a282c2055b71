"""A `Pty` kept in memory, beside `PtySession`: the TUI's front and the injector are tested
against it in-process. It records what was typed and signalled; the test plays Claude (`emit`
output, `exit`) and the user (`user_types`, held while input is paused, as the real PTY leaves
the user's keys unread on our stdin)."""

from __future__ import annotations

from collections.abc import Callable

import anyio


class FakePty:
    """`on_output` sees what the test emits (as `PtySession`'s does); `on_input`, `on_resize`
    and `on_signal` let the test's Claude react (it draws what is typed, redraws on a size
    change, exits on SIGTERM)."""

    def __init__(
        self,
        rows: int = 24,
        cols: int = 80,
        *,
        on_output: Callable[[bytes], None] | None = None,
        on_input: Callable[[bytes], None] | None = None,
        on_resize: Callable[[int, int], None] | None = None,
        on_signal: Callable[[int], None] | None = None,
    ) -> None:
        self.rows, self.cols = rows, cols
        self.on_output = on_output
        self.on_input = on_input
        self.on_resize = on_resize
        self.on_signal = on_signal
        self.writes: list[bytes] = []  # what reached Claude, the user's released keys included
        self.signals: list[int] = []
        self.resizes: list[tuple[int, int]] = []
        self.paused = False
        self.looks = 0  # size() and input_unread() calls: how often the caller looked
        self.stopped = False  # stop() was called
        self.unread = 0  # bytes typed that the test's Claude has not read (the test sets it)
        self._held: list[bytes] = []  # the user's keys while input is paused
        self._exited = anyio.Event()
        self._changed = anyio.Event()

    # The test's side.

    def emit(self, data: bytes) -> None:
        """Claude writes `data` to its terminal."""
        if self.on_output is not None:
            self.on_output(data)

    def exit(self) -> None:
        self._exited.set()
        self._note()

    @property
    def exited(self) -> bool:
        return self._exited.is_set()

    def user_types(self, data: bytes) -> None:
        """The user types `data`: Claude gets it, once input is not paused."""
        if self.paused:
            self._held.append(data)
        else:
            self.writes.append(data)
        self._note()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Return once `condition` holds, checked after each call the fake sees (the test
        bounds the wait)."""
        while not condition():
            await self._changed.wait()

    # The `Pty` side.

    def write_input(self, data: bytes) -> None:
        self.writes.append(data)
        if self.on_input is not None:
            self.on_input(data)
        self._note()

    def input_unread(self) -> int:
        self.looks += 1
        self._note()
        return self.unread

    def resize(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.resizes.append((rows, cols))
        if self.on_resize is not None:
            self.on_resize(rows, cols)
        self._note()

    def size(self) -> tuple[int, int]:
        self.looks += 1
        self._note()
        return self.rows, self.cols

    def send_signal(self, sig: int, *, foreground_group: bool = False) -> None:
        self.signals.append(sig)
        if self.on_signal is not None:
            self.on_signal(sig)
        self._note()

    async def pause_input(self) -> None:
        self.paused = True
        self._note()

    def resume_input(self) -> None:
        self.paused = False
        self.writes.extend(self._held)
        self._held.clear()
        self._note()

    async def wait_exit(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self._exited.wait()
        return self.exited

    async def stop(self, grace: float = 3.0) -> None:
        self.stopped = True
        self.exit()

    def _note(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
