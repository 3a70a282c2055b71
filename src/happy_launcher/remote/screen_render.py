"""The remote-mode screen's lines drawn with `rich`: scrollback printed once, the live region redrawn.

The only module of the screen that knows rich. Scrollback lines are printed in full (the main
thread's text as markdown); live lines take one row each, cut with an ellipsis, except the
streamed preview and the input line, which wrap and show their last rows. Text from the session
goes through terminal/plain_text.py (never rich markup, no escape sequence obeyed), and its markdown is
read with HTML off: a tag the model wrote is shown as written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from happy_launcher.remote.screen_keys import PASTE_OFF, PASTE_ON
from happy_launcher.remote.screen_model import Line, LineKind
from happy_launcher.remote.screen_view import INPUT_ROWS, PARTIAL_ROWS
from happy_launcher.terminal.fdio import write_all
from happy_launcher.terminal.plain_text import as_text, plain_console, visible

_STYLES: dict[LineKind, str] = {
    "user": "bold",
    "text": "",
    "thinking": "dim italic",
    "service": "yellow",
    "file": "cyan",
    "tool": "",
    "subagent": "magenta",
    "turn": "dim",
    "notice": "yellow",
    "more": "dim",
    "partial": "dim",
    "working": "cyan",
    "permission": "bold yellow",
    "input": "",
    "hint": "dim",
    "status": "reverse",
}
_MARK_STYLES = {"✓": "green", "✗": "red", "⊘": "yellow", "?": "yellow", "○": "cyan", "◇": "magenta"}


class TerminalOutput:
    """The file rich writes to: the terminal's fd, in raw mode (so `\\n` needs its `\\r`).

    Every byte also goes to `observe` (the terminal guard's mode tracker), so whatever mode we
    switch on (hidden cursor, bracketed paste) is switched off on any exit. Once the terminal is
    gone (EIO after a hangup), output is dropped: the screen must still be able to wind down.
    """

    encoding = "utf-8"

    def __init__(self, fd: int, observe: Callable[[bytes], None]) -> None:
        self._fd = fd
        self._observe = observe
        self._pending: list[str] = []
        self._broken = False

    def write(self, text: str) -> int:
        self._pending.append(text)
        return len(text)

    def flush(self) -> None:
        text, self._pending = "".join(self._pending), []
        if text:
            self.raw(text.replace("\n", "\r\n").encode("utf-8", "replace"))

    def raw(self, data: bytes) -> None:
        self._observe(data)
        if self._broken:
            return
        try:
            write_all(self._fd, data)
        except OSError:
            self._broken = True

    def isatty(self) -> bool:
        return True


class Renderer:
    """A rich `Live` region at the bottom of the terminal (no alternate screen: what scrolls up
    stays in the terminal's own scrollback). A context manager: the region is erased on exit."""

    def __init__(self, out: TerminalOutput, *, rows: int, cols: int) -> None:
        self._out = out
        self.console = plain_console(
            file=out,  # a write/flush file is all rich needs
            force_terminal=True,
            force_interactive=True,
            width=cols,
            height=rows,
        )
        self._live = Live(console=self.console, auto_refresh=False, transient=True)

    @property
    def rows(self) -> int:
        return self.console.size.height

    def resize(self, rows: int, cols: int) -> None:
        self.console.size = (cols, rows)

    def __enter__(self) -> Renderer:
        self._live.start()
        self._out.raw(PASTE_ON)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._out.raw(PASTE_OFF)
        finally:
            self._live.stop()

    def draw(self, committed: Sequence[Line], live: Sequence[Line]) -> None:
        # One write: printing redraws the old region below the new scrollback, which the update
        # then replaces; the terminal never shows the steps.
        with self.console:
            if committed:
                self.console.print(scrollback(committed))
            self._live.update(live_view(live), refresh=True)


def scrollback(lines: Sequence[Line]) -> RenderableType:
    return Group(*(_full(line) for line in lines))


def live_view(lines: Sequence[Line]) -> RenderableType:
    return Group(*(_row(line) for line in lines))


def _full(line: Line) -> RenderableType:
    if line.kind == "text" and line.depth == 0:
        grid = Table.grid(padding=(0, 1))
        grid.add_row(Text(line.mark), LiteralHtmlMarkdown(line.text))
        return grid
    return _indented(_text(line), line.depth)


def _row(line: Line) -> RenderableType:
    if line.kind == "partial":
        return _Tail(as_text(line.text, _STYLES["partial"]), PARTIAL_ROWS)
    if line.kind == "input":
        text = _text(line)
        text.append(" ", style="reverse")  # the cursor: the real one stays hidden under Live
        return _Tail(text, INPUT_ROWS)
    first = line.text.split("\n", 1)[0]
    return _indented(_text(Line(line.kind, first, line.mark), one_row=True), line.depth)


def _indented(renderable: Text, depth: int) -> RenderableType:
    return Padding(renderable, (0, 0, 0, 2 * depth)) if depth else renderable


def _text(line: Line, *, one_row: bool = False) -> Text:
    text = Text(no_wrap=one_row, overflow="ellipsis" if one_row else "fold")
    if line.mark:
        text.append(line.mark, style=_MARK_STYLES.get(line.mark, _STYLES[line.kind]))
        text.append(" ")
    text.append_text(as_text(line.text, _STYLES[line.kind]))
    return text


class LiteralHtmlMarkdown(Markdown):
    """rich's Markdown, but its parser has HTML off: rich drops the HTML tokens it gets (all
    but `<kbd>`), so `<b>bold?</b>` would vanish; read as text, the tags are shown."""

    def __init__(self, markdown: str) -> None:
        super().__init__("")  # rich's own parser (HTML on) gets nothing to read
        self.markup = visible(markdown)
        self.parsed = (
            MarkdownIt("commonmark", {"html": False}).enable(["strikethrough", "table"]).parse(self.markup)
        )


class _Tail:
    """The last `rows` rows of `text` wrapped to the width it gets."""

    def __init__(self, text: Text, rows: int) -> None:
        self._text = text
        self._rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = list(self._text.wrap(console, options.max_width))[-self._rows :]
        yield from rows or [Text("")]
