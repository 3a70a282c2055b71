"""The remote-mode screen's live region layout (remote/screen_view.py) and its rich drawing
(remote/screen_render.py), without a terminal."""

from __future__ import annotations

import io
import os

from rich.console import Console, RenderableType

from happy_launcher.protocol import EnvelopeFactory, SequentialIds, ToolCallStartEv, TurnStartEv
from happy_launcher.remote.screen_keys import Key, KeyController
from happy_launcher.remote.screen_model import Line, Transcript
from happy_launcher.remote.screen_render import TerminalOutput, live_view, scrollback
from happy_launcher.remote.screen_types import StatusInfo
from happy_launcher.remote.screen_view import (
    BUSY_HINT,
    EXIT_HINT,
    IDLE_HINT,
    PROMPT_HINT,
    compose,
)
from happy_launcher.session.ports import PermissionRequest

STATUS = StatusInfo("hsession1", "0f3c-uuid", "claude-sonnet")
make = EnvelopeFactory(SequentialIds("e"))


def plain(lines: list[Line]) -> list[str]:
    return [line.plain() for line in lines]


def running(start: int = 10_000, tools: int = 0) -> Transcript:
    t = Transcript()
    t.apply([make.agent(TurnStartEv(), turn="tone", time=start)])
    for n in range(tools):
        start_ev = ToolCallStartEv(call=f"c{n}", name="Read", title=f"f{n}.py", description="", args={})
        t.apply([make.agent(start_ev, turn="tone", time=start)])
    return t


def test_idle() -> None:
    assert plain(compose(Transcript(), KeyController(), STATUS, now=0, rows=24)) == [
        "❯ ",
        IDLE_HINT,
        "remote · happy hsession1 · claude 0f3c-uuid · claude-sonnet",
    ]
    bare = compose(Transcript(), KeyController(), StatusInfo("hsession1"), now=0, rows=24)
    assert bare[-1].plain() == "remote · happy hsession1"


def test_a_running_turn_with_a_preview_and_a_draft() -> None:
    t = running(tools=1)
    t.partial("Let me")
    keys = KeyController()
    keys.feed(Key("text", "next question"), now=0, turn="tone")
    lines = compose(t, keys, STATUS, now=15_400, rows=24)
    assert plain(lines)[:-1] == [
        "○ Read f0.py",
        "Let me",
        "⠙ Working… 5s",
        "❯ next question",
        BUSY_HINT,
    ]
    keys.feed(Key("ctrl-c"), now=0, turn="tone")
    lines = compose(t, keys, STATUS, now=10_000 + 125_000, rows=24)
    assert lines[0].kind == "tool" and lines[2].plain() == "⠋ Interrupting… 2m 05s"


def test_the_oldest_permission_prompt_and_how_many_wait() -> None:
    keys = KeyController()
    keys.add_prompt(PermissionRequest("p1", "Bash", {}, "rm -rf  build"))
    keys.add_prompt(PermissionRequest("p2", "mcp__x__y", {"big": 2**70, "path": "/tmp"}, ""))
    lines = plain(compose(Transcript(), keys, STATUS, now=0, rows=24))
    assert lines[:2] == ["? Allow Bash: rm -rf build?", f"  {PROMPT_HINT} · 1 more waiting"]
    keys.feed(Key("text", "y"), now=0, turn=None)
    lines = plain(compose(Transcript(), keys, STATUS, now=0, rows=24))
    assert lines[:2] == [
        "? Allow mcp__x__y: {'big': 1180591620717411303424, 'path': '/tmp'}?",
        f"  {PROMPT_HINT}",
    ]


def test_the_exit_hint_while_armed() -> None:
    keys = KeyController()
    keys.feed(Key("ctrl-c"), now=1_000, turn=None)
    assert compose(Transcript(), keys, STATUS, now=2_000, rows=24)[-2].plain() == EXIT_HINT
    assert compose(Transcript(), keys, STATUS, now=9_000, rows=24)[-2].plain() == IDLE_HINT


def test_the_live_region_fits_the_terminal() -> None:
    t = running(tools=40)
    t.partial("streaming")
    for rows in (5, 16, 24, 60):
        lines = compose(t, KeyController(), STATUS, now=10_000, rows=rows)
        body = [line for line in lines if line.kind in ("tool", "more")]
        # Below it: the preview (up to 4 rows), working, the input (up to 3 rows), hint, status;
        # and one row spare, so the top of the region never scrolls away.
        assert len(body) == max(1, min(40, rows - 11)), rows
        if rows > 12:
            assert body[-1].plain() == "○ Read f39.py"
        if rows < 51:
            assert body[0].plain() == f"… {40 - len(body) + 1} more lines above"


def render(renderable: RenderableType, width: int = 40) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(renderable)
    return [row.rstrip() for row in out.getvalue().splitlines()]


def test_drawing_lines() -> None:
    text = scrollback(
        [
            Line("text", "Some **bold** claim\n\n- item", "●"),
            Line("text", "[red]not markup[/red]", "●", depth=1),
            Line("tool", "Bash " + "x" * 60, "✓"),
        ]
    )
    assert render(text) == [
        "● Some bold claim",
        "",
        "   • item",
        "  ● [red]not markup[/red]",
        "✓ Bash",  # rich wraps at the space, then folds the long word
        "x" * 40,
        "x" * 20,
    ]
    live = live_view(
        [
            Line("tool", "Bash " + "x" * 60, "○"),
            Line("text", "first\nsecond", "●"),
            Line("partial", " ".join(f"w{n}" for n in range(60))),
            Line("input", "draft", "❯"),
        ]
    )
    rows = render(live)
    assert rows[:2] == ["○ Bash " + "x" * 32 + "…", "● first"]
    assert len(rows) == 2 + 4 + 1  # the preview shows its last 4 rows
    assert rows[5].rstrip().endswith("w59")
    assert rows[6].rstrip() == "❯ draft"


def test_what_the_model_wrote_is_shown_as_written() -> None:
    """HTML in agent markdown is text (rich dropped it), and no escape sequence reaches the
    terminal from any line (a title, the preview, a permission prompt)."""
    text = scrollback(
        [
            Line("text", "Echo: <img src=x onerror=alert(1)><b>bold?</b> [bold]x[/bold]", "●"),
            Line("text", "<div>\n*hi*\n</div>\n\n\x1b[2J`\x1b]0;t\x07`", "●"),
            Line("tool", "Bash [/] \x1b[31mred", "✓"),
            Line("service", "a\r\nb\rc"),
        ]
    )
    assert render(text, width=80) == [
        "● Echo: <img src=x onerror=alert(1)><b>bold?</b> [bold]x[/bold]",
        "● <div> hi </div>",
        "",
        "  ␛[2J␛]0;t␇",
        "✓ Bash [/] ␛[31mred",
        "a",
        "b␍c",
    ]
    live = live_view(
        [
            Line("permission", "Allow Bash: [/] \x1b[31mx?", "?"),
            Line("partial", "<b>streamed</b> \x9b31m"),
        ]
    )
    assert render(live, width=80) == ["? Allow Bash: [/] ␛[31mx?", "<b>streamed</b> \\x9b31m"]


def test_terminal_output_adds_carriage_returns_and_survives_a_gone_terminal() -> None:
    read_fd, write_fd = os.pipe()
    seen: list[bytes] = []
    out = TerminalOutput(write_fd, seen.append)
    out.write("a\nb")
    out.write("é\n")
    assert seen == []  # nothing goes out before a flush
    out.flush()
    assert os.read(read_fd, 100) == "a\r\nbé\r\n".encode()
    assert seen == ["a\r\nbé\r\n".encode()]
    os.close(read_fd)  # the terminal is gone: writes fail (EPIPE), output is dropped
    out.write("lost\n")
    out.flush()
    out.raw(b"\x1b[?25h")
    assert seen[-1] == b"\x1b[?25h"  # the guard's tracker still sees every byte
    os.close(write_fd)
