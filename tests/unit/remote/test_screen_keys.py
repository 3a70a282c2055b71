"""The remote-mode screen's keyboard (remote/screen_keys.py): bytes to keys, keys to commands."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from happy_launcher.remote.screen_keys import (
    EXIT_WINDOW_MS,
    MAX_INPUT,
    SWITCH_WINDOW_MS,
    Answer,
    End,
    Interrupt,
    Key,
    KeyController,
    KeyDecoder,
    Send,
)
from happy_launcher.session.ports import PermissionRequest


def keys(*chunks: bytes) -> list[Key]:
    decoder = KeyDecoder()
    return [key for chunk in chunks for key in decoder.feed(chunk)]


def typed(text: str) -> list[Key]:
    return [Key("text", char) for char in text]


def test_text_and_control_keys() -> None:
    assert keys(b"hi \xc3\xa9\r\x7f\x08\x15\x17\x03\x04\x14\r\n\x01\t") == [
        *typed("hi é"),
        Key("enter"),
        Key("backspace"),
        Key("backspace"),
        Key("kill-line"),
        Key("kill-word"),
        Key("ctrl-c"),
        Key("ctrl-d"),
        Key("ctrl-t"),
        Key("enter"),  # CR LF is one Enter; Ctrl-A is not bound
        Key("text", " "),
    ]


def test_escape_sequences_are_dropped_even_when_cut_by_a_read() -> None:
    assert keys(b"a\x1b[A\x1b[1;5Cb\x1bOPc\x1bxd") == typed("abcd")
    assert keys(b"a\x1b[1;", b"5Cb") == typed("ab")
    assert keys(b"a\x1b", b"b") == typed("ab")  # a lone ESC: the Escape key (not bound)
    assert keys(b"\x1b", b"[A", b"c") == typed("c")


def test_a_utf8_character_cut_by_a_read() -> None:
    assert keys(b"\xe6\x97", b"\xa5!") == typed("日!")


def test_a_bracketed_paste_is_one_key_with_its_line_breaks() -> None:
    paste = b"\x1b[200~line one\r\nline\ttwo\x03\x1b[A\rthree\x1b[201~"
    assert keys(paste + b"\r") == [Key("paste", "line one\nline two[A\nthree"), Key("enter")]
    # Cut anywhere, including inside both markers.
    for cut in range(1, len(paste)):
        assert keys(paste[:cut], paste[cut:]) == [Key("paste", "line one\nline two[A\nthree")], cut


@given(st.lists(st.binary(max_size=64), max_size=8))
def test_any_bytes_decode_without_error(chunks: list[bytes]) -> None:
    for key in keys(*chunks):
        assert key.name not in ("text", "paste") or key.text


PROMPT_1 = PermissionRequest("p1", "Bash", {"command": "rm -rf build"}, "rm -rf build")
PROMPT_2 = PermissionRequest("p2", "Write", {}, "a.txt")


def feed(c: KeyController, *ks: Key, now: int = 0, turn: str | None = None) -> list[object]:
    return [c.feed(k, now=now, turn=turn) for k in ks]


def test_editing_and_sending() -> None:
    c = KeyController()
    assert feed(c, Key("paste", "fix the  bug"), Key("kill-word"), Key("backspace")) == [None] * 3
    assert c.buffer == "fix the "  # the word went, the spaces before it stay (as in a shell)
    assert feed(c, Key("text", "now"), Key("enter")) == [None, Send("fix the now")]
    assert c.buffer == ""
    assert feed(c, Key("text", "  x"), Key("enter")) == [None, Send("x")]  # spaces then text
    feed(c, Key("text", "x"), Key("kill-line"))
    assert c.buffer == ""
    feed(c, Key("paste", "z" * (MAX_INPUT + 10)))
    assert len(c.buffer) == MAX_INPUT


def test_ctrl_c_interrupts_a_running_turn_once_then_counts_towards_exit() -> None:
    c = KeyController()
    assert feed(c, Key("ctrl-c"), turn="tone") == [Interrupt()]
    assert c.interrupting("tone")
    assert feed(c, Key("ctrl-c"), now=10, turn="tone") == [None]  # asked already: arms exit
    assert c.exit_armed(10)
    assert feed(c, Key("ctrl-c"), now=20, turn="tone") == [End("exit")]  # a stuck turn can be left
    assert feed(KeyController(), Key("ctrl-c"), turn="ttwo") == [Interrupt()]


def test_ctrl_c_twice_when_idle_exits_only_within_the_window() -> None:
    c = KeyController()
    assert feed(c, Key("ctrl-c"), now=1_000) == [None]
    assert c.exit_armed_for(1_000) == EXIT_WINDOW_MS + 1
    assert feed(c, Key("ctrl-c"), now=1_000 + EXIT_WINDOW_MS + 1) == [None]  # too late: armed again
    assert not c.exit_armed(1_000 + 2 * EXIT_WINDOW_MS + 2)
    assert c.exit_armed_for(1_000 + 2 * EXIT_WINDOW_MS + 2) is None
    assert feed(c, Key("ctrl-c"), now=1_000 + 2 * EXIT_WINDOW_MS) == [End("exit")]


def test_ctrl_c_clears_the_input_line_first_and_ctrl_d_exits_an_empty_idle_line() -> None:
    c = KeyController()
    assert feed(c, Key("text", "draft"), Key("ctrl-c")) == [None, None]
    assert c.buffer == "" and not c.exit_armed(0)
    assert feed(c, Key("ctrl-d"), turn="tone") == [None]  # not while a turn runs
    assert feed(c, Key("text", "x"), Key("ctrl-d")) == [None, None]  # not with a draft
    assert feed(c, Key("kill-line"), Key("ctrl-d")) == [None, End("exit")]


def test_ctrl_t_asks_for_local_mode() -> None:
    assert feed(KeyController(), Key("ctrl-t"), turn="tone") == [End("switch")]


def test_space_twice_on_an_empty_line_asks_for_local_mode_within_the_window() -> None:
    c = KeyController()
    assert feed(c, Key("text", " "), now=1_000) == [None]
    assert feed(c, Key("text", " "), now=1_000 + SWITCH_WINDOW_MS) == [End("switch")]
    assert feed(KeyController(), Key("text", "  ")) == [End("switch")]  # both in one read
    late = KeyController()
    feed(late, Key("text", " "), now=0)
    assert feed(late, Key("text", " "), now=SWITCH_WINDOW_MS + 1) == [None]  # too late: armed again
    assert feed(late, Key("text", " "), now=SWITCH_WINDOW_MS + 2) == [End("switch")]
    typing = KeyController()
    assert feed(typing, *typed("a  b"), Key("enter")) == [None] * 4 + [Send("a  b")]  # spaces in text
    broken = KeyController()
    assert feed(broken, Key("text", " "), Key("backspace"), Key("text", " ")) == [None] * 3  # not a pair


def test_permission_prompts_are_answered_in_order_and_take_the_keys() -> None:
    c = KeyController()
    c.add_prompt(PROMPT_1)
    c.add_prompt(PROMPT_2)
    c.add_prompt(PROMPT_1)  # the same request twice is asked once
    assert c.prompts == (PROMPT_1, PROMPT_2)
    assert feed(c, Key("text", "x"), Key("enter"), Key("text", "Y")) == [None, None, Answer(PROMPT_1, True)]
    assert feed(c, Key("paste", "y")) == [None]  # a paste never answers
    assert c.buffer == ""  # keys went to the prompt, not the input line
    assert feed(c, Key("text", "a")) == [Answer(PROMPT_2, False, stop=True)]
    assert feed(c, Key("text", "y")) == [None]  # no prompt left: typing again
    assert c.buffer == "y"
    c.add_prompt(PROMPT_1)
    assert feed(c, Key("text", "n")) == [Answer(PROMPT_1, False)]
    assert feed(c, Key("ctrl-c"), turn="tone") == [Interrupt()]  # Ctrl-C is never an answer


def test_a_prompt_answered_elsewhere_is_dropped() -> None:
    c = KeyController()
    c.add_prompt(PROMPT_1)
    c.add_prompt(PROMPT_2)
    c.drop_prompt("p1")
    c.drop_prompt("unknown")
    assert c.prompts == (PROMPT_2,)
