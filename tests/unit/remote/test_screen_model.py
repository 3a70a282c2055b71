"""The remote-mode screen's transcript (remote/screen_model.py): envelopes in, committed and live
lines out. Expected lines are written as `Line.plain()` strings (mark, text, two spaces per level)."""

from __future__ import annotations

from happy_launcher.protocol import (
    Envelope,
    EnvelopeFactory,
    Event,
    FileEv,
    SequentialIds,
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
from happy_launcher.remote.screen_model import MAX_TEXT, Transcript, format_duration, format_size

T1, T2 = "tone", "ttwo"
SUB = "sagentone"
make = EnvelopeFactory(SequentialIds("e"))


def agent(ev: Event, *, time: int = 1_000, turn: str = T1, subagent: str | None = None) -> Envelope:
    return make.agent(ev, turn=turn, time=time, subagent=subagent)


def tool(call: str, name: str = "Bash", title: str = "ls", *, subagent: str | None = None) -> Envelope:
    start = ToolCallStartEv(call=call, name=name, title=title, description=title, args={})
    return agent(start, subagent=subagent)


def end(call: str, *, subagent: str | None = None) -> Envelope:
    return agent(ToolCallEndEv(call=call), subagent=subagent)


def turn_end(status: TurnStatus, time: int, turn: str = T1) -> Envelope:
    return agent(TurnEndEv(status=status), time=time, turn=turn)


def committed(t: Transcript) -> list[str]:
    return [line.plain() for line in t.take_committed()]


def live(t: Transcript) -> list[str]:
    return [line.plain() for line in t.live_lines()]


def test_the_seed_example_stream() -> None:
    t = Transcript()
    t.apply(
        [
            make.user_text("Find TODOs", 1_000),
            agent(TurnStartEv(), time=1_001),
            agent(ServiceEv(text="**Service:** connected to remote runtime")),
            agent(TextEv(text="Searching...")),
            tool("tc1", "grep", "Searching for TODO"),
            end("tc1"),
            agent(TextEv(text="Found 3 TODOs.")),
            turn_end("completed", 13_301),
        ]
    )
    assert committed(t) == [
        "❯ Find TODOs",
        "ℹ **Service:** connected to remote runtime",
        "● Searching...",
        "✓ grep Searching for TODO",
        "● Found 3 TODOs.",
        "─ Turn completed · 12.3s",
    ]
    assert live(t) == []
    assert t.turn is None


def test_an_open_tool_call_holds_back_what_follows_it() -> None:
    t = Transcript()
    t.apply([agent(TurnStartEv()), agent(TextEv(text="Running it")), tool("c1", title="make test")])
    assert committed(t) == ["● Running it"]
    assert live(t) == ["○ Bash make test"]
    assert t.turn == T1 and t.turn_started == 1_000

    t.apply([tool("c2", "Read", "src/a.py"), end("c2"), agent(TextEv(text="Both started"))])
    assert committed(t) == []  # c2 is done but c1, before it, is not
    assert live(t) == ["○ Bash make test", "✓ Read src/a.py", "● Both started"]

    t.apply([end("c1")])
    assert committed(t) == ["✓ Bash make test", "✓ Read src/a.py", "● Both started"]
    assert live(t) == []


def test_tool_calls_still_open_when_the_turn_ends_say_how_it_ended() -> None:
    cases: list[tuple[TurnStatus, str]] = [("cancelled", "⊘"), ("failed", "✗"), ("completed", "?")]
    for status, mark in cases:
        t = Transcript()
        t.apply([agent(TurnStartEv(), time=0), tool("c1", title="sleep 100"), turn_end(status, 61_000)])
        assert committed(t) == [f"{mark} Bash sleep 100", f"─ Turn {status} · 1m 01s"]


def test_a_subagent_is_a_nested_block_committed_when_it_stops() -> None:
    t = Transcript()
    t.apply(
        [
            agent(TurnStartEv()),
            agent(StartEv(title="Auth explorer"), subagent=SUB),
            agent(TextEv(text="Find auth code"), subagent=SUB),
            tool("c3", "Grep", "login", subagent=SUB),
            agent(TextEv(text="Meanwhile in the main thread")),
        ]
    )
    # An active subagent does not hold back the main thread.
    assert committed(t) == ["● Meanwhile in the main thread"]
    assert live(t) == ["◇ Auth explorer", "  ● Find auth code", "  ○ Grep login"]

    t.apply(
        [
            end("c3", subagent=SUB),
            agent(TextEv(text="one"), subagent=SUB),
            agent(TextEv(text="two"), subagent=SUB),
        ]
    )
    assert live(t) == ["◇ Auth explorer", "  … 1 earlier", "  ✓ Grep login", "  ● one", "  ● two"]

    t.apply([agent(StopEv(), subagent=SUB)])
    assert committed(t) == [
        "◆ Auth explorer",
        "  ● Find auth code",
        "  ✓ Grep login",
        "  ● one",
        "  ● two",
    ]


def test_a_background_subagent_outlives_its_turn() -> None:
    t = Transcript()
    t.apply(
        [
            agent(TurnStartEv(), time=0),
            agent(StartEv(title="Background"), subagent=SUB),
            tool("c1", "Bash", "slow", subagent=SUB),
            turn_end("completed", 2_000),
        ]
    )
    assert committed(t) == ["─ Turn completed · 2.0s"]
    assert live(t) == ["◇ Background", "  ○ Bash slow"]  # its call is not the turn's to close
    t.apply([agent(StopEv(), subagent=SUB, turn=T2)])  # no result came: the stop closes its calls
    assert committed(t) == ["◆ Background", "  ? Bash slow"]


def test_subagent_content_without_a_start_still_shows() -> None:
    t = Transcript()
    t.apply([agent(TextEv(text="orphan"), subagent=SUB), agent(StopEv(), subagent=SUB)])
    assert committed(t) == ["◆ subagent", "  ● orphan"]
    t.apply([agent(StopEv(), subagent="sunknown")])  # a stop for nothing: nothing
    assert committed(t) == []


def test_partial_text_is_a_preview_until_the_full_text_arrives() -> None:
    t = Transcript()
    t.apply([agent(TurnStartEv())])
    t.partial("Hel")
    t.partial("lo")
    assert t.partial_text == "Hello"
    t.apply([agent(TextEv(text="sub"), subagent=SUB)])  # a subagent's text is not the preview's
    assert t.partial_text == "Hello"
    t.apply([agent(TextEv(text="Hello world"))])
    assert t.partial_text == ""
    t.partial("x" * 20_000)
    assert len(t.partial_text) <= 8_000  # bounded: only its tail is ever shown
    t.apply([turn_end("cancelled", 2_000)])
    assert t.partial_text == ""


def test_thinking_files_notices_and_odd_content() -> None:
    t = Transcript()
    t.apply(
        [
            agent(TurnStartEv()),
            agent(TextEv(text="\n  first thought\nsecond", thinking=True)),
            agent(TextEv(text="   ")),  # blank: nothing
            agent(FileEv(ref="up1", name="shot.png", size=153_249)),
            tool("c1", "Bash", "echo  a\n  b"),  # a multi-line title on one line
            end("c1"),
            end("never-started"),
            agent(TextEv(text="y" * (MAX_TEXT + 5))),
        ]
    )
    t.notice("Could not send: boom")
    t.answered("Allowed Write: a.txt", allowed=True)
    t.answered("Denied Bash: rm", allowed=False)
    lines = committed(t)
    assert lines[:3] == ["✻ first thought", "▣ shot.png (149.7 KB)", "✓ Bash echo a b"]
    assert lines[3] == f"● {'y' * MAX_TEXT}\n… (5 more characters)"
    assert lines[4:] == ["! Could not send: boom", "✓ Allowed Write: a.txt", "✗ Denied Bash: rm"]


def test_a_turn_end_without_its_start() -> None:
    t = Transcript()
    t.apply([turn_end("failed", 5_000, turn=T2)])
    assert committed(t) == ["─ Turn failed"]


def test_formats() -> None:
    assert [format_duration(ms) for ms in (-5, 999, 59_949, 125_000, 3_725_000)] == [
        "0.0s",
        "1.0s",
        "59.9s",
        "2m 05s",
        "1h 02m",
    ]
    assert [format_size(n) for n in (0, 1023, 1024, 5 << 20, 3 << 30)] == [
        "0 B",
        "1023 B",
        "1.0 KB",
        "5.0 MB",
        "3.0 GB",
    ]
