"""`happy claude` argv parsing, session intents and the argv of each launch."""

from __future__ import annotations

from pathlib import Path

import pytest

from happy_launcher.claude.args import HELP, ClaudeArgs, HappyOptions, SessionIntent, parse_happy_claude_args
from happy_launcher.errors import UsageError
from happy_launcher.local.launch import Launch, claude_argv, launch_plan, relaunch

SID = "0b4a5a8e-6f0e-4c39-9a43-3f1c3c2f7a11"
SID2 = "7c1f0d2e-1111-4a2b-8c3d-4e5f60718293"
FRESH = SessionIntent()


@pytest.mark.parametrize(
    ("argv", "intent", "passthrough"),
    [
        ([], FRESH, ()),
        (["hello world"], FRESH, ("hello world",)),
        # --resume / -r with and without a value (commander: next token unless it looks like an option)
        (["--resume"], SessionIntent("resume"), ()),
        (["--resume", SID], SessionIntent("resume", resume_id=SID), ()),
        ([f"--resume={SID}"], SessionIntent("resume", resume_id=SID), ()),
        (["--resume="], SessionIntent("resume"), ()),
        (["-r"], SessionIntent("resume"), ()),
        (["-r", SID], SessionIntent("resume", resume_id=SID), ()),
        ([f"-r{SID}"], SessionIntent("resume", resume_id=SID), ()),
        (["--resume", "--model", "opus"], SessionIntent("resume"), ("--model", "opus")),
        (["-r", "-p", "hi"], SessionIntent("resume"), ("-p", "hi")),
        # a token after a bare --resume is its value (a name/search term), as in Claude itself
        (["--resume", "fix the bug"], SessionIntent("resume", resume_id="fix the bug"), ()),
        (["hi", "--resume"], SessionIntent("resume"), ("hi",)),
        (["--resume", "--", "hi"], SessionIntent("resume"), ("--", "hi")),
        # continue
        (["--continue"], SessionIntent("continue"), ()),
        (["-c", "hi"], SessionIntent("continue"), ("hi",)),
        (["-pc", "hi"], SessionIntent("continue"), ("-p", "hi")),
        (["-cp"], SessionIntent("continue"), ("-p",)),
        # fork and the user's own session id
        (["--resume", SID, "--fork-session"], SessionIntent("resume", resume_id=SID, fork=True), ()),
        (["-c", "--fork-session"], SessionIntent("continue", fork=True), ()),
        (["--fork-session"], FRESH, ()),  # Claude ignores it without --resume/--continue
        (["--session-id", SID], SessionIntent(session_id=SID), ()),
        ([f"--session-id={SID}"], SessionIntent(session_id=SID), ()),
        (
            ["-r", SID, "--fork-session", "--session-id", SID2],
            SessionIntent("resume", resume_id=SID, session_id=SID2, fork=True),
            (),
        ),
        # other Claude flags, values and prompts pass through in order
        (
            ["--model", "opus", "-p", "do it", "--verbose", "--output-format=json"],
            FRESH,
            ("--model", "opus", "-p", "do it", "--verbose", "--output-format=json"),
        ),
        (["--system-prompt", "-c", "hi"], FRESH, ("--system-prompt", "-c", "hi")),
        (["-n", "-r"], FRESH, ("-n", "-r")),  # -n takes a required value
        (["-dapi", "-c"], SessionIntent("continue"), ("-dapi",)),  # -d's attached value
        (["-x", "-c"], SessionIntent("continue"), ("-x",)),  # unknown short flag: Claude decides
        (["--yolo", "hi"], FRESH, ("--dangerously-skip-permissions", "hi")),
        # `--` ends parsing: everything after it is untouched
        (
            ["--model", "x", "--", "--resume", "--happy-nope", "--yolo", "-c"],
            FRESH,
            ("--model", "x", "--", "--resume", "--happy-nope", "--yolo", "-c"),
        ),
    ],
)
def test_parse_session_flags(argv: list[str], intent: SessionIntent, passthrough: tuple[str, ...]) -> None:
    args = parse_happy_claude_args(argv)
    assert args.intent == intent
    assert args.passthrough == passthrough
    assert args.user_settings is None
    assert args.options == HappyOptions()


@pytest.mark.parametrize(
    ("argv", "options", "passthrough"),
    [
        (["--happy-events", "-"], HappyOptions(events="-"), ()),
        (["--happy-events=/tmp/e.jsonl", "hi"], HappyOptions(events="/tmp/e.jsonl"), ("hi",)),
        (["--happy-events", "out.jsonl"], HappyOptions(events="out.jsonl"), ()),
        (["--happy-home", "/h", "-p"], HappyOptions(home=Path("/h")), ("-p",)),
        (["--happy-home=/h"], HappyOptions(home=Path("/h")), ()),
        (["--happy-replay-existing"], HappyOptions(replay_existing=True), ()),
        (["--happy-enable-hooks"], HappyOptions(enable_hooks=True), ()),
        (["--happy-no-sync", "-p", "hi"], HappyOptions(no_sync=True), ("-p", "hi")),
        (["--happy-remote-input", "inject"], HappyOptions(remote_input="inject"), ()),
        (["--happy-remote-input=switch", "hi"], HappyOptions(remote_input="switch"), ("hi",)),
        (["--help"], HappyOptions(show_help=True), ()),
        (["-h"], HappyOptions(show_help=True), ()),
        (["-ph"], HappyOptions(show_help=True), ("-p",)),
    ],
)
def test_parse_happy_options(argv: list[str], options: HappyOptions, passthrough: tuple[str, ...]) -> None:
    args = parse_happy_claude_args(argv)
    assert args.options == options
    assert args.passthrough == passthrough


@pytest.mark.parametrize(
    ("argv", "settings", "passthrough"),
    [
        (["--settings", "s.json", "hi"], "s.json", ("hi",)),
        (["--settings={}", "hi"], "{}", ("hi",)),
        (["--settings", '{"model": "x"}'], '{"model": "x"}', ()),
        (["--settings", "a.json", "--settings", "b.json"], "b.json", ()),  # last one counts, as in Claude
    ],
)
def test_parse_settings(argv: list[str], settings: str, passthrough: tuple[str, ...]) -> None:
    args = parse_happy_claude_args(argv)
    assert args.user_settings == settings
    assert args.passthrough == passthrough


@pytest.mark.parametrize(
    ("argv", "headless"), [(["-p", "hi"], True), (["--print"], True), (["-cp"], True), (["hi"], False)]
)
def test_headless(argv: list[str], headless: bool) -> None:
    args = parse_happy_claude_args(argv)
    assert args.headless is headless
    assert ("-p" in args.passthrough or "--print" in args.passthrough) is headless


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--happy-xyz"], "--happy-events"),  # lists the known ones
        (["--happy-events"], "needs a value"),
        (["--happy-events", "--model"], "needs a value"),
        (["--happy-events="], "non-empty"),
        (["--happy-replay-existing=1"], "takes no value"),
        (["--settings"], "--settings needs a value"),
        (["--session-id"], "--session-id needs a value"),
        (["--session-id", "nope"], "not a valid UUID"),
        (["--session-id", SID.replace("-", "")], "not a valid UUID"),
        (["--resume", SID, "--session-id", SID2], "--fork-session"),
        (["-c", "--session-id", SID2], "--fork-session"),
        (["--resume", "-c"], "can't be combined"),
        (["-n"], "-n needs a value"),
        (["--happy-remote-input", "paste"], "takes inject or switch, not 'paste'"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_happy_claude_args(argv)


def test_unknown_happy_flag_lists_known_ones() -> None:
    with pytest.raises(UsageError) as info:
        parse_happy_claude_args(["--happy-evnets", "-"])
    text = str(info.value)
    for known in ("--happy-events", "--happy-home", "--happy-replay-existing"):
        assert known in text
    assert "\n" not in text


def test_help_points_to_claude_help() -> None:
    assert "claude --help" in HELP
    for flag in ("--happy-events", "--happy-home", "--happy-replay-existing", "--yolo"):
        assert flag in HELP


@pytest.mark.parametrize(
    ("intent", "launch"),
    [
        (FRESH, Launch("fresh", session_id=SID)),
        (SessionIntent(session_id=SID2), Launch("fresh", session_id=SID2)),
        (SessionIntent("resume"), Launch("resume")),
        (SessionIntent("resume", resume_id=SID2), Launch("resume", target=SID2)),
        (SessionIntent("continue"), Launch("continue")),
        (SessionIntent("resume", resume_id=SID2, fork=True), Launch("resume", SID2, SID, fork=True)),
        (SessionIntent("continue", fork=True), Launch("continue", session_id=SID, fork=True)),
        (SessionIntent("continue", session_id=SID2, fork=True), Launch("continue", None, SID2, True)),
    ],
)
def test_launch_plan(intent: SessionIntent, launch: Launch) -> None:
    assert launch_plan(intent, new_id=lambda: SID) == launch


@pytest.mark.parametrize(
    ("launch", "expected"),
    [
        (Launch("fresh", session_id=SID), SID),
        (Launch("resume", target=SID), SID),  # resuming keeps the id (2.1.329)
        (Launch("resume", target="my session"), None),  # a name: learn the id from the hook
        (Launch("resume"), None),  # the picker
        (Launch("continue"), None),
        (Launch("resume", target=SID, session_id=SID2, fork=True), SID2),
    ],
)
def test_expected_session_id(launch: Launch, expected: str | None) -> None:
    assert launch.expected_session_id == expected


def test_default_new_id_is_a_fresh_uuid4() -> None:
    a, b = launch_plan(FRESH), launch_plan(FRESH)
    assert a.session_id and b.session_id and a.session_id != b.session_id
    assert a.session_id[14] == "4"  # version nibble


@pytest.mark.parametrize(
    ("argv", "launch", "expected"),
    [
        (["-p", "hi"], Launch("fresh", session_id=SID), ["--session-id", SID, "--settings", "S", "-p", "hi"]),
        (["-r", SID2, "hi"], Launch("resume", target=SID2), ["--resume", SID2, "--settings", "S", "hi"]),
        (["--resume", "--", "hi"], Launch("resume"), ["--resume", "--settings", "S", "--", "hi"]),
        (
            ["-c", "--yolo"],
            Launch("continue"),
            ["--continue", "--settings", "S", "--dangerously-skip-permissions"],
        ),
        (
            ["-r", SID2, "--fork-session"],
            Launch("resume", SID2, SID, fork=True),
            ["--resume", SID2, "--fork-session", "--session-id", SID, "--settings", "S"],
        ),
        (
            ["-c", "--fork-session"],
            Launch("continue", session_id=SID, fork=True),
            ["--continue", "--fork-session", "--session-id", SID, "--settings", "S"],
        ),
        (["--resume=-odd"], Launch("resume", target="-odd"), ["--resume=-odd", "--settings", "S"]),
        (
            ["--settings", "user.json", "--model", "m"],
            Launch("fresh", session_id=SID),
            ["--session-id", SID, "--settings", "S", "--model", "m"],
        ),
    ],
)
def test_claude_argv_first_launch(argv: list[str], launch: Launch, expected: list[str]) -> None:
    args = parse_happy_claude_args(argv)
    assert launch_plan(args.intent, new_id=lambda: SID) == launch
    assert claude_argv(Path("/bin/claude"), args, launch, settings="S") == ["/bin/claude", *expected]


@pytest.mark.parametrize(
    "argv",
    [
        ["-c", "hi"],
        ["--resume", SID2, "--fork-session"],
        ["-r"],
        ["--session-id", SID],
        ["--continue", "--fork-session", "--", "a prompt"],
    ],
)
def test_relaunch_never_repeats_session_flags_nor_prompt(argv: list[str]) -> None:
    args = parse_happy_claude_args([*argv, "--model", "m"] if "--" not in argv else ["--model", "m", *argv])
    out = claude_argv("claude", args, relaunch(SID2, has_transcript=True), settings="S")
    assert out == ["claude", "--resume", SID2, "--settings", "S", "--model", "m"]


def test_a_relaunch_before_the_first_prompt_starts_the_session_under_its_id() -> None:
    args = parse_happy_claude_args(["--resume", SID2, "fix it", "--model", "m"])
    launch = relaunch(SID2, has_transcript=False)  # remote mode took no prompt yet: no transcript
    out = claude_argv("claude", args, launch, settings="S")
    assert out == ["claude", "--session-id", SID2, "--settings", "S", "--model", "m"]
    assert launch.expected_session_id == SID2


@pytest.mark.parametrize(
    ("argv", "prompt", "relaunch_passthrough"),
    [
        (["fix it", "--model", "m"], ("fix it",), ("--model", "m")),
        (["--model", "m", "--", "-x y"], ("-x y",), ("--model", "m")),
        # a variadic option's values are not the prompt (commander keeps taking them)
        (["--add-dir", "a", "b", "--verbose", "go"], ("go",), ("--add-dir", "a", "b", "--verbose")),
        (["--add-dir=a", "go"], ("go",), ("--add-dir=a",)),
        # an optional value is taken when it doesn't look like an option
        (["--debug", "api", "go"], ("go",), ("--debug", "api")),
        (["-d", "api", "go"], ("go",), ("-d", "api")),
        (["--debug", "--verbose", "go"], ("go",), ("--debug", "--verbose")),
        (["-n", "name", "go"], ("go",), ("-n", "name")),
        (["--resume", "x", "go"], ("go",), ()),
    ],
)
def test_prompt_is_tracked(
    argv: list[str], prompt: tuple[str, ...], relaunch_passthrough: tuple[str, ...]
) -> None:
    args = parse_happy_claude_args(argv)
    assert args.prompt == prompt
    assert args.relaunch_passthrough == relaunch_passthrough


def test_parse_result_is_frozen() -> None:
    args = parse_happy_claude_args(["hi"])
    assert isinstance(args, ClaudeArgs)
    with pytest.raises(AttributeError):
        args.passthrough = ()  # type: ignore[misc]


def test_uuid_helpers_agree_with_the_uuid_module() -> None:
    import uuid

    from happy_launcher.claude.args import is_uuid, new_uuid4

    for _ in range(50):
        made = new_uuid4()
        parsed = uuid.UUID(made)
        assert str(parsed) == made and parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert is_uuid(made) and is_uuid(made.upper())
    for bad in ("", "x", "{" + str(uuid.uuid4()) + "}", uuid.uuid4().hex, str(uuid.uuid4()) + "0"):
        assert not is_uuid(bad)
