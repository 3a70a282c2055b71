"""The pass-through argv (as `claude/args.py` leaves it) regrouped into one ClaudeFlag per option."""

from __future__ import annotations

import pytest

from happy_launcher.claude.args import parse_happy_claude_args
from happy_launcher.claude.cli_flags import ClaudeFlag, split_flags


def flags(*argv: str) -> list[tuple[str, tuple[str, ...]]]:
    args = parse_happy_claude_args(argv)
    return [(f.name, f.values) for f in split_flags(args.passthrough, args.prompt_positions)]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), []),
        (("hello",), []),  # the prompt is not an option
        (("--model", "opus", "hi"), [("--model", ("opus",))]),
        (("--model=opus",), [("--model", ("opus",))]),
        (("--system-prompt", "-c"), [("--system-prompt", ("-c",))]),  # a required value, whatever it is
        (("--verbose", "--ide"), [("--verbose", ()), ("--ide", ())]),
        # variadic: plain tokens after the first value are values too (commander), not the prompt
        (("--add-dir", "a", "b", "--model", "x"), [("--add-dir", ("a", "b")), ("--model", ("x",))]),
        (("--add-dir=a", "fix it"), [("--add-dir", ("a",))]),  # `=` form: one value, then the prompt
        (("--tools", "", "--strict-mcp-config"), [("--tools", ("",)), ("--strict-mcp-config", ())]),
        # optional values: the next token unless it looks like an option
        (("--debug", "hooks"), [("--debug", ("hooks",))]),
        (("--debug", "--verbose"), [("--debug", ()), ("--verbose", ())]),
        (("--debug=api",), [("--debug", ("api",))]),
        # short flags get their long names; a short option's value may be attached
        (("-p", "hi"), [("--print", ())]),
        (("-n", "job"), [("--name", ("job",))]),
        (("-njob",), [("--name", ("job",))]),
        (("-pdhooks",), [("--print", ()), ("--debug", ("hooks",))]),
        (("-d", "-p"), [("--debug", ()), ("--print", ())]),
        (("-x",), [("-x", ())]),  # unknown: kept as written
        # happy's and the session flags are not in the passthrough at all
        (("--yolo", "--resume", "abc", "--happy-home", "/h"), [("--dangerously-skip-permissions", ())]),
        # unknown long flags are flags; what follows is the prompt (as for the local launch)
        (("--foo", "bar"), [("--foo", ())]),
        (("--foo=bar",), [("--foo", ("bar",))]),
        # everything after `--` is positional
        (("--", "--model", "x"), []),
    ],
)
def test_split_flags(argv: tuple[str, ...], expected: list[tuple[str, tuple[str, ...]]]) -> None:
    assert flags(*argv) == expected


def test_split_flags_keeps_the_token_as_written() -> None:
    (flag,) = split_flags(["-njob"])
    assert flag == ClaudeFlag("-njob", "--name", ("job",))
