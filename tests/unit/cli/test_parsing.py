"""The verbs' parsing (cli/parsing.py): a group's help and its errors, a verb's bad command line
in one line with exit 2, and the entry point's list of verbs in step with the help's."""

from __future__ import annotations

import pytest

from happy_launcher.cli.app import HAPPY, run_app
from happy_launcher.cli.main import VERBS
from happy_launcher.cli.parsing import Group, summary


def test_the_entry_point_sends_every_listed_verb_but_claude_to_the_parsers() -> None:
    listed = {name for _, section in HAPPY.sections for name in section}
    assert VERBS - {"--help", "-h", "--version", "help"} == listed - {"claude"}


def test_a_group_without_a_verb_shows_its_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(["auth"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: happy auth COMMAND") and "  login   Pair this terminal" in out
    assert run_app(["auth", "--help"]) == 0


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["bogus"], "happy: no such command: 'bogus' (one of: claude, replay,"),
        (["daemon", "--bogus"], "happy daemon: no such option: '--bogus' (one of: start, stop, status)"),
        (["watch", "--from"], "happy watch: unrecognized arguments: --from (see `happy watch --help`)"),
        (["switch", "--to", "up"], "happy switch: argument --to: invalid choice: 'up'"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    assert run_app(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1, err


def test_a_verbs_line_in_the_help_is_its_first_sentence() -> None:
    def verb(prog: str, argv: list[str]) -> int:
        """Do a thing (one: of two). Then
        more, on the next line.

        And a paragraph."""
        return 0

    assert summary(verb) == "Do a thing (one: of two)"
    group = Group("happy x", "The x verbs.", (("commands", {"do": f"{__name__}:nothing"}),))
    assert "  do  Nothing to do" in group.help()


def nothing(prog: str, argv: list[str]) -> int:
    """Nothing to do."""
    return 0
