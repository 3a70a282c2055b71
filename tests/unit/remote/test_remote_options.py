"""Remote mode's SDK options from the `happy claude` flags: each mapping, what is carried verbatim,
ignored (and reported) or refused, and the Claude argv the SDK then builds from them."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

from happy_launcher.claude.args import parse_happy_claude_args
from happy_launcher.errors import UsageError
from happy_launcher.remote.options import CLAUDE_CODE_PRESET, RemoteOptions, flag_policy, remote_options

SID = "0b4a5a8e-6f0e-4c39-9a43-3f1c3c2f7a11"
BINARY = Path("/opt/claude/bin/claude")
CWD = Path("/work/project")
README = Path(__file__).resolve().parents[3] / "README.md"


def build(*argv: str, resume: bool = False, env: dict[str, str] | None = None) -> RemoteOptions:
    args = parse_happy_claude_args(argv)
    return remote_options(
        args, binary=BINARY, cwd=CWD, env=env or {"HOME": "/h"}, session_id=SID, resume=resume
    )


def opts(*argv: str) -> ClaudeAgentOptions:
    return build(*argv).options


def sdk_argv(options: ClaudeAgentOptions) -> list[str]:
    # The SDK's own command builder (pinned SDK version): the argv Claude really gets from these options.
    return SubprocessCLITransport(prompt="", options=options)._build_command()


def test_defaults() -> None:
    result = build()
    o = result.options
    assert (o.cli_path, o.cwd, o.env) == (BINARY, CWD, {"HOME": "/h"})
    assert (o.session_id, o.resume) == (SID, None)
    assert o.system_prompt == CLAUDE_CODE_PRESET
    assert o.setting_sources == ["user", "project", "local"]
    assert o.include_partial_messages and o.forward_subagent_text
    assert (o.model, o.permission_mode, o.settings, o.extra_args) == (None, None, None, {})
    assert result.dropped == () and result.notice() is None
    argv = sdk_argv(o)
    assert f"--session-id={SID}" in argv and "--setting-sources=user,project,local" in argv
    assert "--system-prompt" not in argv  # the preset: Claude's own prompt


def test_resume_uses_the_session_id() -> None:
    o = build(resume=True).options
    assert (o.resume, o.session_id) == (SID, None)
    assert f"--resume={SID}" in sdk_argv(o)


def test_env_is_a_copy() -> None:
    env = {"HOME": "/h", "ANTHROPIC_BASE_URL": "http://x"}
    o = build(env=env).options
    assert o.env == env and o.env is not env


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (("--model", "opus"), "model", "opus"),
        (("--model", "a", "--model=b"), "model", "b"),  # the last one counts, as in Claude
        (("--fallback-model", "sonnet,haiku"), "fallback_model", "sonnet,haiku"),
        (("--permission-mode", "plan"), "permission_mode", "plan"),
        (("--permission-mode", "manual"), "permission_mode", "default"),  # Claude's new name for it
        (("--permission-mode", "default"), "permission_mode", "default"),
        (("--dangerously-skip-permissions",), "permission_mode", "bypassPermissions"),
        (("--yolo", "--permission-mode", "plan"), "permission_mode", "bypassPermissions"),
        (
            ("--permission-mode", "plan", "--dangerously-skip-permissions"),
            "permission_mode",
            "bypassPermissions",
        ),
        (("--allowedTools", "Read", "Bash(git *)"), "allowed_tools", ["Read", "Bash(git *)"]),
        (("--allowed-tools", "Read", "--allowedTools=Edit"), "allowed_tools", ["Read", "Edit"]),
        (("--disallowed-tools", "WebFetch"), "disallowed_tools", ["WebFetch"]),
        (("--tools", "Bash,Read"), "tools", ["Bash,Read"]),
        (("--tools", ""), "tools", [""]),
        (("--add-dir", "/a", "/b", "--add-dir", "/c"), "add_dirs", ["/a", "/b", "/c"]),
        (("--betas", "x-1"), "betas", ["x-1"]),
        (("--mcp-config", "mcp.json"), "mcp_servers", "mcp.json"),
        (("--strict-mcp-config",), "strict_mcp_config", True),
        (("--setting-sources", "user,project"), "setting_sources", ["user", "project"]),
        (("--setting-sources", ""), "setting_sources", []),
        (("--max-turns", "3"), "max_turns", 3),
        (("--max-budget-usd", "0.5"), "max_budget_usd", 0.5),
        (("--max-thinking-tokens", "2048"), "max_thinking_tokens", 2048),
        (("--effort", "high"), "effort", "high"),
        (
            ("--plugin-dir", "p1", "--plugin-dir", "p2"),
            "plugins",
            [{"type": "local", "path": p} for p in ("p1", "p2")],
        ),
        (("--system-prompt", "Be terse."), "system_prompt", "Be terse."),
        (("--system-prompt-file", "p.md"), "system_prompt", {"type": "file", "path": "p.md"}),
        (("--append-system-prompt", "Also X."), "system_prompt", {**CLAUDE_CODE_PRESET, "append": "Also X."}),
    ],
)
def test_sdk_fields(argv: tuple[str, ...], field: str, value: Any) -> None:
    o = opts(*argv)
    assert getattr(o, field) == value
    assert o.extra_args == {}


def test_settings_are_carried() -> None:
    o = opts("--settings", '{"model": "x"}')
    assert o.settings == '{"model": "x"}'
    assert sdk_argv(o)[sdk_argv(o).index("--settings") + 1] == '{"model": "x"}'


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (
            ("--agents", '{"rev": {"description": "d", "prompt": "p"}}'),
            {"agents": '{"rev": {"description": "d", "prompt": "p"}}'},
        ),
        (("--agent", "rev"), {"agent": "rev"}),
        (("-n", "job"), {"name": "job"}),
        (("--debug",), {"debug": None}),
        (("-d", "hooks"), {"debug": "hooks"}),
        (("--json-schema", "{}"), {"json-schema": "{}"}),
        (("--exclude-dynamic-system-prompt-sections",), {"exclude-dynamic-system-prompt-sections": None}),
        (("--restricted", "--safe-mode", "--bare"), {"restricted": None, "safe-mode": None, "bare": None}),
        (("--effort", "huge"), {"effort": "huge"}),  # Claude warns and ignores it, as in local mode
        (("--thinking", "adaptive"), {"thinking": "adaptive"}),
        (("--plugin-url", "u", "--plugin-url", "u"), {"plugin-url": "u"}),
        (("--brand-new-flag",), {"brand-new-flag": None}),  # unknown to us: Claude judges it
        (("--brand-new=-1",), {"brand-new": "-1"}),
    ],
)
def test_verbatim(argv: tuple[str, ...], extra: dict[str, str | None]) -> None:
    assert opts(*argv).extra_args == extra


def test_verbatim_values_reach_claude_bound_to_their_flag() -> None:
    argv = sdk_argv(opts("--agent", "rev", "--brand-new=-1", "-d"))
    assert argv[argv.index("--agent") + 1] == "rev"
    assert "--brand-new=-1" in argv and "--debug" in argv


@pytest.mark.parametrize(
    ("argv", "prompt", "extra"),
    [
        # a custom prompt replaces the preset; what the field cannot say goes to Claude as given
        (("--system-prompt", "S", "--append-system-prompt", "A"), "S", {"append-system-prompt": "A"}),
        (("--system-prompt", "S", "--system-prompt-file", "f"), "S", {"system-prompt-file": "f"}),
        (
            ("--system-prompt-file", "f", "--append-system-prompt", "A"),
            {"type": "file", "path": "f"},
            {"append-system-prompt": "A"},
        ),
        (
            ("--append-system-prompt", "A", "--append-system-prompt", "B"),
            {**CLAUDE_CODE_PRESET, "append": "B"},
            {},
        ),
    ],
)
def test_system_prompt_combinations(argv: tuple[str, ...], prompt: object, extra: dict[str, str]) -> None:
    o = opts(*argv)
    assert (o.system_prompt, o.extra_args) == (prompt, extra)


@pytest.mark.parametrize(
    ("argv", "dropped"),
    [
        (("--ide",), ["--ide"]),
        (("--output-format", "json", "--input-format=text"), ["--output-format", "--input-format=text"]),
        (("--permission-prompt-tool", "mcp__x__y"), ["--permission-prompt-tool"]),
        (
            ("--include-hook-events", "--replay-user-messages"),
            ["--include-hook-events", "--replay-user-messages"],
        ),
        (
            ("--remote-control", "--tmux", "--ax-screen-reader"),
            ["--remote-control", "--tmux", "--ax-screen-reader"],
        ),
    ],
)
def test_ignored_flags_are_reported(argv: tuple[str, ...], dropped: list[str]) -> None:
    result = build(*argv)
    assert [d.flag for d in result.dropped] == dropped
    assert result.options.extra_args == {}
    notice = result.notice()
    assert notice is not None and "\n" not in notice
    assert all(flag in notice for flag in dropped)


def test_already_set_flags_change_nothing() -> None:
    result = build("-p", "--verbose", "--include-partial-messages", "--forward-subagent-text", "hello")
    assert result.dropped == () and result.options.extra_args == {}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--bg",), "--bg can't be used in remote mode"),
        (("--cloud",), "outside happy"),
        (("--teleport", "x"), "outside happy"),
        (("--worktree",), "worktree"),
        (("-w", "feat"), "worktree"),
        (("--from-pr", "12"), "--resume"),
        (("--no-session-persistence",), "transcript"),
        (("--resume-session-at", "u1"), "local mode"),
        (("-x",), "unknown option -x"),
        (("--permission-mode", "bogus"), "not one of acceptEdits"),
        (("--setting-sources", "user,team"), "'team' is not one of user, project, local"),
        (("--max-turns", "many"), "--max-turns needs a whole number greater than 0"),
        (("--max-turns", "0"), "greater than 0"),
        (("--max-budget-usd", "-1"), "--max-budget-usd needs an amount"),
        (("--mcp-config", "a.json", "b.json"), "one --mcp-config"),
        (("--mcp-config", "a.json", "--mcp-config", "b.json"), "one --mcp-config"),
        (("--file", "f1:a", "f2:b"), "one value of --file"),
        (("--plugin-url", "u1", "--plugin-url", "u2"), "one value of --plugin-url"),
    ],
)
def test_refused(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        build(*argv)


MAPPED = {
    "--model": "opus",
    "--fallback-model": "sonnet",
    "--permission-mode": "plan",
    "--allowedTools": "Read",
    "--disallowedTools": "Bash",
    "--add-dir": "/a",
    "--mcp-config": "m.json",
    "--max-turns": "2",
    "--effort": "low",
    "--tools": "Read",
    "--agent": "rev",
    "--append-system-prompt": "A",
}


def test_every_mapped_flag_reaches_claude() -> None:
    given = [token for pair in MAPPED.items() for token in pair]
    argv = sdk_argv(opts(*given, "--strict-mcp-config", "--setting-sources", "user"))
    pairs = dict(itertools.pairwise(argv))
    assert {k: pairs.get(k) for k in MAPPED} == MAPPED
    assert "--strict-mcp-config" in argv and "--setting-sources=user" in argv


def readme_table() -> list[tuple[list[str], str]]:
    text = README.read_text()
    section = text[text.index("### Remote mode: which claude flags are carried") :]
    rows: list[tuple[list[str], str]] = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        flags = re.findall(r"`(--[a-zA-Z-]+)", cells[0]) if line.startswith("|") else []
        if flags:
            rows.append((flags, cells[1].split()[0].strip("*").lower()))
    return rows


def test_readme_table_matches_the_code() -> None:
    rows = readme_table()
    assert sum(len(flags) for flags, _ in rows) > 60
    words = {
        "sdk": "sdk",
        "verbatim": "verbatim",
        "already": "set",
        "ignored": "ignored",
        "refused": "refused",
    }
    for flags, how in rows:
        for flag in flags:
            assert flag_policy(flag) == words[how], (flag, how)
