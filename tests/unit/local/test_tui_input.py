"""Inject mode's pure parts: what may be typed, the writes it is typed in, what the screen says
about the input box (screens as pyte drew the real TUI 2.1.329), and how the inbound ledger
knows an injected prompt by its text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from happy_launcher.claude.mapper import Mapper
from happy_launcher.local.tui_input import box_text, dialog_open, inject_problem, typing_chunks
from happy_launcher.local.tui_screen import TuiScreen
from happy_launcher.protocol import SequentialIds
from happy_launcher.session.commit import CommitPoint
from happy_launcher.session.inbound import InboundLedger, accept, pending_prompts
from happy_launcher.session.mirror import Mirror
from happy_launcher.store.sessions import SessionStore
from tests.support.records import user

RULE = "─" * 120
IDLE = ["", " ▐▛███▛█   Claude Code v2.1.329", "", RULE, "❯", RULE, "  ⏸ manual mode on · ? for shortcuts"]
DRAFT = [*IDLE[:4], "❯ line1", "  line2", RULE, "  ⏸ manual mode on"]
DIALOG = [
    "❯ Create the file",
    "● I'll run it.",
    RULE,
    " Bash command",
    " Do you want to proceed?",
    " ❯ 1. Yes",
    "   3. No",
    " Esc to cancel · Tab to amend",
]


@pytest.mark.parametrize(
    ("lines", "box"),
    [
        (IDLE, ""),
        (DRAFT, "line1\nline2"),
        (DIALOG, None),  # its ❯ marks an answer, not a box
        ([*IDLE[:5]], None),  # no closing rule: not drawn yet
        ([], None),
        ([RULE, "❯ old", RULE, "● reply", RULE, "❯ new", RULE], "new"),  # the lowest box
    ],
)
def test_box_text(lines: list[str], box: str | None) -> None:
    assert box_text(lines) == box


def test_dialog_open() -> None:
    assert dialog_open(DIALOG)
    assert not dialog_open(IDLE) and not dialog_open(DRAFT)


def test_the_screen_is_read_from_the_tui_output_only_while_started() -> None:
    screen = TuiScreen()
    screen.observe(b"ignored")
    screen.start(5, 20)
    assert screen.lines(5, 20) == [" " * 20] * 5
    screen.observe(("─" * 20 + "\r\n❯ abc\r\n" + "─" * 20).encode())
    screen.observe(b"")
    assert box_text(screen.lines(5, 20)) == "abc"
    assert box_text(screen.lines(6, 30)) == "abc"  # resized with the PTY
    screen.stop()
    screen.observe(b"more")
    assert screen.lines(5, 20) == []


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        ("hi", [b"hi"]),
        ("a" * 250, [b"a" * 100, b"a" * 100, b"a" * 50]),
        ("one\r\ntwo\rthree\n", [b"one\ntwo\nthree\n"]),  # line ends are Ctrl-J: never a submit
        ("é" * 101, [("é" * 100).encode(), "é".encode()]),  # characters, not bytes
        ("", []),
    ],
)
def test_typing_chunks(text: str, chunks: list[bytes]) -> None:
    assert typing_chunks(text) == chunks


def test_only_text_and_newlines_may_be_typed() -> None:
    assert inject_problem("plain\nlines\r\nand ünïcode ❯") is None
    problem = inject_problem("a\x1b[Ab\tc\x03")
    assert problem is not None
    assert "U+0003, U+0009, U+001B" in problem and "without --inject" in problem


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore.open(tmp_path / "home") as s:
        s.create_session("s1", cwd="/w", started_at=1)
        yield s


def mirror_on(store: SessionStore, ledger: InboundLedger) -> Mirror:
    commit = CommitPoint(store, "s1", delivered=ledger.drain)
    return Mirror(Mapper(SequentialIds()), commit, clock=lambda: 7, seen=set(), inbound=ledger)


def test_an_injected_prompt_is_known_by_its_text_once_armed(store: SessionStore) -> None:
    ledger = InboundLedger()
    seq = accept(store, "s1", "m1", "hello there", 1, "p-1", "inject").message_seq
    assert [p.inject for p in pending_prompts(store, "s1")] == [True]
    ledger.expect("p-1", seq)
    mirror = mirror_on(store, ledger)
    mirror.deliver([user("hello there", uuid="u-0")])  # typed by the user before: not armed
    assert len(store.pending_inbound("s1")) == 1
    ledger.expect_text("hello there\n", seq)
    mirror.deliver([user("other", uuid="u-1"), user("hello there", uuid="u-2", sidechain=True)])
    assert len(store.pending_inbound("s1")) == 1  # neither another prompt nor a subagent's
    mirror.deliver([user("hello there", uuid="u-3")])  # the TUI's own uuid
    assert store.pending_inbound("s1") == []  # delivered with the batch of its user text
    assert not ledger.waiting  # its uuid is forgotten too: never delivered twice
    mirror.deliver([user("hello there", uuid="u-4")])
    assert store.pending_inbound("s1") == []


def test_an_unconfirmed_injection_is_disarmed(store: SessionStore) -> None:
    ledger = InboundLedger()
    seq = accept(store, "s1", "m1", "hi", 1, "p-1", "inject").message_seq
    ledger.expect_text("hi", seq)
    ledger.forget_text(seq)
    mirror_on(store, ledger).deliver([user("hi", uuid="u-1")])
    assert len(store.pending_inbound("s1")) == 1
