"""What the remote-mode screen shows of a session, sans-IO: envelopes in, lines out.

The screen has two parts (see screen.py): scrollback above, printed once and never touched again,
and a small live region at the bottom, redrawn in place. A `Transcript` decides which part each
piece of the session belongs to. A line whose state can still change (a running tool call, an
active subagent) stays in the live region; everything else is committed to the scrollback, in
stream order. An open tool call holds back what follows it, so the scrollback reads in the order
things happened; an active subagent does not (a background subagent can outlive its turn): it
stays pinned in the live region and is committed as one nested block when it stops.

Times come from the envelopes (a turn's duration is turn-end time minus turn-start time), so the
same envelopes always give the same lines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from happy_launcher.protocol import (
    Envelope,
    FileEv,
    ServiceEv,
    StartEv,
    StopEv,
    TextEv,
    ToolCallEndEv,
    ToolCallStartEv,
    TurnEndEv,
    TurnStartEv,
    TurnStatus,
)

LineKind = Literal[
    "user", "text", "thinking", "service", "file", "tool", "subagent", "turn", "notice", "more",
    "partial", "working", "permission", "input", "hint", "status",
]  # fmt: skip
ToolState = Literal["running", "done", "interrupted", "failed", "no-result"]

MAX_TEXT = 20_000  # characters of one text shown; a runaway message must not stall the screen
MAX_PARTIAL = 8_000  # characters of streamed preview kept (only its tail is ever shown)
SUBAGENT_TAIL = 3  # an active subagent shows its header and its last few lines

_TOOL_MARKS: dict[ToolState, str] = {
    "running": "○",
    "done": "✓",
    "interrupted": "⊘",
    "failed": "✗",
    "no-result": "?",
}
# A tool call still open when its turn ends never got its result: say how the turn went instead.
_UNFINISHED: dict[TurnStatus, ToolState] = {
    "completed": "no-result",
    "cancelled": "interrupted",
    "failed": "failed",
}


@dataclass(frozen=True)
class Line:
    """One logical line of the screen: `kind` picks its style, `mark` is its leading glyph."""

    kind: LineKind
    text: str
    mark: str = ""
    depth: int = 0

    def plain(self) -> str:
        body = f"{self.mark} {self.text}" if self.mark else self.text
        return "  " * self.depth + body


@dataclass
class _Tool:
    call: str
    name: str
    title: str
    turn: str | None
    subagent: str | None
    state: ToolState = "running"

    @property
    def final(self) -> bool:
        return self.state != "running"

    def lines(self, depth: int = 0) -> list[Line]:
        text = f"{self.name} {self.title}" if self.title else self.name
        return [Line("tool", text, _TOOL_MARKS[self.state], depth)]


@dataclass
class _Fixed:
    """A line that never changes (text, service, file, turn end, notice)."""

    line: Line
    final = True

    def lines(self, depth: int = 0) -> list[Line]:
        return [dataclasses.replace(self.line, depth=depth) if depth else self.line]


@dataclass
class _Subagent:
    title: str
    children: list[_Tool | _Fixed] = field(default_factory=list)
    stopped: bool = False

    @property
    def final(self) -> bool:
        return self.stopped

    def header(self) -> Line:
        return Line("subagent", self.title, "◆" if self.stopped else "◇")

    def lines(self, depth: int = 0) -> list[Line]:
        return [self.header(), *(line for child in self.children for line in child.lines(1))]

    def live_lines(self) -> list[Line]:
        shown = self.children[-SUBAGENT_TAIL:]
        hidden = len(self.children) - len(shown)
        more = [Line("more", f"… {hidden} earlier", depth=1)] if hidden else []
        return [self.header(), *more, *(line for child in shown for line in child.lines(1))]


_Block = _Tool | _Fixed | _Subagent


class Transcript:
    """The session as the screen shows it. Not thread-safe: one event loop feeds and reads it."""

    def __init__(self) -> None:
        self._pending: list[_Block] = []  # not committed yet, in stream order
        self._committed: list[Line] = []  # committed, not yet taken by the renderer
        self._tools: dict[tuple[str | None, str], _Tool] = {}  # open calls by (subagent, call)
        self._subagents: dict[str, _Subagent] = {}  # active ones
        self._turn_starts: dict[str, int] = {}  # open turns -> turn-start time (ms)
        self.turn: str | None = None  # the latest open turn
        self._partial = ""

    # -- reading -------------------------------------------------------------------------------------

    @property
    def turn_started(self) -> int | None:
        """When the latest open turn started (Unix ms), or None when no turn runs."""
        return None if self.turn is None else self._turn_starts.get(self.turn)

    @property
    def partial_text(self) -> str:
        return self._partial

    def take_committed(self) -> list[Line]:
        """Lines for the scrollback that were not taken before (each is returned once)."""
        lines, self._committed = self._committed, []
        return lines

    def live_lines(self) -> list[Line]:
        """What is still open, and whatever an open tool call holds back behind it."""
        out: list[Line] = []
        for block in self._pending:
            out += block.live_lines() if isinstance(block, _Subagent) else block.lines()
        return out

    # -- feeding -------------------------------------------------------------------------------------

    def apply(self, envelopes: Iterable[Envelope]) -> None:
        for envelope in envelopes:
            self._apply(envelope)
        self._commit()

    def partial(self, delta: str) -> None:
        """Streamed text of the main thread, shown until the full text envelope arrives."""
        self._partial = (self._partial + delta)[-MAX_PARTIAL:]

    def notice(self, text: str) -> None:
        """A line of the screen's own (an answer given here, an action that failed)."""
        self._pending.append(_Fixed(Line("notice", text, "!")))
        self._commit()

    def answered(self, text: str, *, allowed: bool) -> None:
        self._pending.append(_Fixed(Line("notice", text, "✓" if allowed else "✗")))
        self._commit()

    def _apply(self, env: Envelope) -> None:
        ev = env.ev
        if isinstance(ev, TurnStartEv):
            if env.turn is not None:
                self._turn_starts[env.turn] = env.time
                self.turn = env.turn
        elif isinstance(ev, TurnEndEv):
            self._end_turn(env, ev.status)
        elif isinstance(ev, StartEv) and env.subagent is not None:
            self._start_subagent(env.subagent, ev.title)
        elif isinstance(ev, StopEv) and env.subagent is not None:
            self._stop_subagent(env.subagent)
        elif isinstance(ev, ToolCallStartEv):
            if env.subagent is None:
                self._partial = ""
            tool = _Tool(ev.call, ev.name, _one_line(ev.title), env.turn, env.subagent)
            self._tools[(env.subagent, ev.call)] = tool
            self._add(env.subagent, tool)
        elif isinstance(ev, ToolCallEndEv):
            ended = self._tools.pop((env.subagent, ev.call), None)
            if ended is not None:
                ended.state = "done"
        else:
            line = _content_line(env, ev)
            if line is not None:
                if env.subagent is None and line.kind == "text":
                    self._partial = ""
                self._add(env.subagent, _Fixed(line))

    def _add(self, subagent: str | None, block: _Tool | _Fixed) -> None:
        if subagent is None:
            self._pending.append(block)
            return
        owner = self._subagents.get(subagent)
        if owner is None:  # content before its start (or after its stop): still show it, nested
            owner = self._start_subagent(subagent, None)
        owner.children.append(block)

    def _start_subagent(self, subagent: str, title: str | None) -> _Subagent:
        block = _Subagent(_one_line(title) if title else "subagent")
        self._subagents[subagent] = block
        self._pending.append(block)
        return block

    def _stop_subagent(self, subagent: str) -> None:
        block = self._subagents.pop(subagent, None)
        if block is None:
            return
        block.stopped = True
        self._close_tools(lambda tool: tool.subagent == subagent, "no-result")

    def _end_turn(self, env: Envelope, status: TurnStatus) -> None:
        started = self._turn_starts.pop(env.turn, None) if env.turn is not None else None
        if env.turn == self.turn:
            self.turn = None
            self._partial = ""
        # Background subagents outlive the turn; the main thread's calls do not.
        self._close_tools(lambda tool: tool.turn == env.turn and tool.subagent is None, _UNFINISHED[status])
        text = f"Turn {status}"
        if started is not None:
            text += f" · {format_duration(env.time - started)}"
        self._pending.append(_Fixed(Line("turn", text, "─")))

    def _close_tools(self, which: Callable[[_Tool], bool], state: ToolState) -> None:
        for key, tool in list(self._tools.items()):
            if which(tool):
                tool.state = state
                del self._tools[key]

    def _commit(self) -> None:
        """Move finished blocks to the scrollback, in order, up to the first open tool call."""
        kept: list[_Block] = []
        held = False
        for block in self._pending:
            if block.final and not held:
                self._committed += block.lines()
                continue
            kept.append(block)
            held = held or isinstance(block, _Tool)
        self._pending = kept


def _content_line(env: Envelope, ev: object) -> Line | None:
    if isinstance(ev, TextEv):
        if not ev.text.strip():
            return None
        if ev.thinking:
            return Line("thinking", _first_line(ev.text), "✻")
        if env.role == "user":
            return Line("user", _clip(ev.text), "❯")
        return Line("text", _clip(ev.text), "●")
    if isinstance(ev, ServiceEv):
        return Line("service", _clip(ev.text), "ℹ")
    if isinstance(ev, FileEv):
        return Line("file", f"{ev.name} ({format_size(ev.size)})", "▣")
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}\n… ({len(text) - MAX_TEXT} more characters)"


def format_duration(ms: int) -> str:
    seconds = max(0, ms) / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
