"""The Agent SDK options of remote mode, built from the `happy claude` flags (a pure function).

Each pass-through Claude flag is, in this order of preference (README, "Remote mode: which claude flags
are carried"):

- mapped to its ``ClaudeAgentOptions`` field (model, permission mode, tools, system prompt, ...);
- carried verbatim through ``extra_args`` when the SDK has no field and the flag is safe under the SDK;
- already set by the SDK or the launcher (``--verbose``, ``-p``, ...): nothing to do;
- ignored, and reported in :attr:`RemoteOptions.dropped`, when it only concerns Claude's TUI or the
  SDK's own protocol with Claude;
- refused (:class:`UsageError`) when leaving it out would run a different session than the one asked for.

A flag unknown to this module is carried verbatim: Claude judges it, as in local mode.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Protocol, cast, get_args

from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import EffortLevel, PermissionMode, SettingSource, SystemPromptPreset

from happy_launcher.claude.cli_flags import VARIADIC, ClaudeFlag, split_flags
from happy_launcher.errors import UsageError

__all__ = [
    "CLAUDE_CODE_PRESET",
    "DroppedFlag",
    "PassThrough",
    "RemoteOptions",
    "check_remote_flags",
    "flag_policy",
    "remote_options",
]

# Without the preset the SDK sends `--system-prompt ""`: the model gets a 135-character prompt and another
# identity (switching-facts §7).
CLAUDE_CODE_PRESET: SystemPromptPreset = {"type": "preset", "preset": "claude_code"}
ALL_SETTING_SOURCES: tuple[SettingSource, ...] = ("user", "project", "local")


class PassThrough(Protocol):
    """What remote mode reads of the parsed `happy claude` argv: `claude/args.py`'s ClaudeArgs (the two
    launchers do not import each other)."""

    @property
    def passthrough(self) -> tuple[str, ...]: ...
    @property
    def prompt_positions(self) -> tuple[int, ...]: ...
    @property
    def user_settings(self) -> str | None: ...


@dataclass(frozen=True)
class DroppedFlag:
    flag: str  # as the user wrote it
    reason: str


@dataclass(frozen=True)
class RemoteOptions:
    options: ClaudeAgentOptions
    dropped: tuple[DroppedFlag, ...] = ()

    def notice(self) -> str | None:
        """One line telling the user which flags remote mode left out, and why; None if none."""
        if not self.dropped:
            return None
        parts = ", ".join(f"{d.flag} ({d.reason})" for d in self.dropped)
        return f"remote mode ignores {parts}"


def remote_options(
    args: PassThrough, *, binary: Path, cwd: Path, env: Mapping[str, str], session_id: str, resume: bool
) -> RemoteOptions:
    """The SDK options for a remote launch of Claude session ``session_id``: resumed when ``resume``, else
    created with that (pre-assigned) id. ``binary`` is the one local mode runs (``find_claude(env)``);
    ``env`` is Claude's whole environment. Raises :class:`UsageError` for a flag remote mode refuses or
    a bad value."""
    opts = ClaudeAgentOptions(
        cli_path=binary,
        cwd=cwd,
        env=dict(env),
        resume=session_id if resume else None,
        session_id=None if resume else session_id,
        settings=args.user_settings,
        setting_sources=list(ALL_SETTING_SOURCES),
        include_partial_messages=True,
        forward_subagent_text=True,
    )
    return RemoteOptions(opts, _from_flags(opts, args))


def check_remote_flags(args: PassThrough) -> None:
    """Raise :class:`UsageError` for a flag remote mode refuses or a bad value, before anything starts."""
    _from_flags(ClaudeAgentOptions(), args)


def _from_flags(opts: ClaudeAgentOptions, args: PassThrough) -> tuple[DroppedFlag, ...]:
    """Set ``opts`` from the pass-through flags; the flags left out."""
    flags = split_flags(args.passthrough, args.prompt_positions)
    dropped: list[DroppedFlag] = []
    for flag in flags:
        _apply(opts, flag, dropped)
    _system_prompt(opts, flags)
    if any(f.name == "--dangerously-skip-permissions" for f in flags):
        opts.permission_mode = "bypassPermissions"
    return tuple(dropped)


Policy = Literal["sdk", "verbatim", "set", "ignored", "refused"]


def flag_policy(name: str) -> Policy:
    """How remote mode treats the long flag ``name``: "sdk", "verbatim", "set", "ignored" or "refused"."""
    name = _ALIASES.get(name, name)
    if name in _FIELDS or name in _SETTLED_LATER:
        return "sdk"
    if name in _ALREADY_SET:
        return "set"
    if name in _IGNORED:
        return "ignored"
    if name in _REFUSED:
        return "refused"
    return "verbatim"


def _apply(opts: ClaudeAgentOptions, flag: ClaudeFlag, dropped: list[DroppedFlag]) -> None:
    name = _ALIASES.get(flag.name, flag.name)
    if not name.startswith("--"):
        raise UsageError(f"unknown option {flag.token} (see `claude --help`)")
    if name in _REFUSED:
        raise UsageError(f"{flag.token} can't be used in remote mode: {_REFUSED[name]}")
    if name in _IGNORED:
        dropped.append(DroppedFlag(flag.token, _IGNORED[name]))
    elif name in _FIELDS:
        _FIELDS[name](opts, flag)
    elif name not in _ALREADY_SET and name not in _SETTLED_LATER:
        _verbatim(opts, name, flag)


def _verbatim(opts: ClaudeAgentOptions, name: str, flag: ClaudeFlag) -> None:
    # extra_args holds one value per flag: a second value would be lost, so it is refused instead.
    key, value = name[2:], (flag.values[0] if flag.values else None)
    repeated = (name in VARIADIC or name in _REPEATABLE) and opts.extra_args.get(key, value) != value
    if len(flag.values) > 1 or repeated:
        raise UsageError(f"remote mode passes one value of {name} to Claude: give it once, with one value")
    opts.extra_args[key] = value


def _system_prompt(opts: ClaudeAgentOptions, flags: Sequence[ClaudeFlag]) -> None:
    """The preset unless the user gives a prompt; the prompt flags the field does not express go verbatim,
    so Claude sees all the user gave (and settles them as it does in local mode)."""
    last = {f.name: f.values[0] for f in flags if f.name in _PROMPT_FLAGS and f.values}
    custom, path, append = (last.get(n) for n in _PROMPT_FLAGS)
    if custom is not None:
        opts.system_prompt = custom
        if path is not None:
            opts.extra_args["system-prompt-file"] = path
    elif path is not None:
        opts.system_prompt = {"type": "file", "path": path}
    else:
        preset = SystemPromptPreset(**CLAUDE_CODE_PRESET)
        if append is not None:
            preset["append"] = append
        opts.system_prompt = preset
        return
    if append is not None:
        opts.extra_args["append-system-prompt"] = append


# -- the SDK fields ------------------------------------------------------------------------------------

_PERMISSION_MODES = ("acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan", "default")


def _permission_mode(opts: ClaudeAgentOptions, flag: ClaudeFlag) -> None:
    mode = flag.values[0]
    if mode not in _PERMISSION_MODES:
        choices = ", ".join(_PERMISSION_MODES[:-1])  # "default" is accepted, but Claude does not list it
        raise UsageError(f"--permission-mode {mode!r} is not one of {choices}")
    # The SDK's type has no "manual": it is Claude's new name for "default" (Claude reports "default").
    opts.permission_mode = cast(PermissionMode, "default" if mode == "manual" else mode)


def _setting_sources(opts: ClaudeAgentOptions, flag: ClaudeFlag) -> None:
    sources = [s.strip() for s in flag.values[0].split(",") if s.strip()]
    for source in sources:
        if source not in ALL_SETTING_SOURCES:
            raise UsageError(f"--setting-sources: {source!r} is not one of user, project, local")
    opts.setting_sources = cast(list[SettingSource], sources)


def _effort(opts: ClaudeAgentOptions, flag: ClaudeFlag) -> None:
    if flag.values[0] in get_args(EffortLevel):
        opts.effort = cast(EffortLevel, flag.values[0])
    else:  # Claude warns and ignores an unknown level: let it, as in local mode
        opts.extra_args["effort"] = flag.values[0]


def _mcp_config(opts: ClaudeAgentOptions, flag: ClaudeFlag) -> None:
    # The SDK passes one --mcp-config value; merging several means reading their files.
    if opts.mcp_servers or len(flag.values) > 1:
        raise UsageError("remote mode takes one --mcp-config: merge your MCP configs into one file or JSON")
    opts.mcp_servers = flag.values[0]


def _number(flag: ClaudeFlag, parse: Callable[[str], float], what: str) -> float:
    try:
        value = parse(flag.values[0])
    except ValueError:
        value = -1
    if value <= 0:
        raise UsageError(f"{flag.name} needs {what} greater than 0, not {flag.values[0]!r}")
    return value


def _set(
    field: str, convert: Callable[[ClaudeFlag], object]
) -> Callable[[ClaudeAgentOptions, ClaudeFlag], None]:
    def apply(opts: ClaudeAgentOptions, flag: ClaudeFlag) -> None:
        setattr(opts, field, convert(flag))

    return apply


def _extend(field: str) -> Callable[[ClaudeAgentOptions, ClaudeFlag], None]:
    def apply(opts: ClaudeAgentOptions, flag: ClaudeFlag) -> None:
        getattr(opts, field).extend(flag.values)

    return apply


def _plugin_dir(opts: ClaudeAgentOptions, flag: ClaudeFlag) -> None:
    opts.plugins.extend({"type": "local", "path": path} for path in flag.values)


def _tools(opts: ClaudeAgentOptions, flag: ClaudeFlag) -> None:
    opts.tools = [*(opts.tools if isinstance(opts.tools, list) else []), *flag.values]


def _value(flag: ClaudeFlag) -> str:
    return flag.values[0]


_FIELDS: Mapping[str, Callable[[ClaudeAgentOptions, ClaudeFlag], None]] = MappingProxyType(
    {
        "--model": _set("model", _value),
        "--fallback-model": _set("fallback_model", _value),
        "--permission-mode": _permission_mode,
        "--allowedTools": _extend("allowed_tools"),
        "--disallowedTools": _extend("disallowed_tools"),
        "--tools": _tools,
        "--add-dir": _extend("add_dirs"),
        "--betas": _extend("betas"),
        "--mcp-config": _mcp_config,
        "--strict-mcp-config": _set("strict_mcp_config", lambda _: True),
        "--setting-sources": _setting_sources,
        "--max-turns": _set("max_turns", lambda f: int(_number(f, int, "a whole number"))),
        "--max-budget-usd": _set("max_budget_usd", lambda f: _number(f, float, "an amount")),
        "--max-thinking-tokens": _set(
            "max_thinking_tokens", lambda f: int(_number(f, int, "a whole number"))
        ),
        "--effort": _effort,
        "--plugin-dir": _plugin_dir,
    }
)
# Settled once all flags are known: the system prompt's (see _system_prompt), and
# --dangerously-skip-permissions, which wins over --permission-mode whatever their order.
_PROMPT_FLAGS = ("--system-prompt", "--system-prompt-file", "--append-system-prompt")
_SETTLED_LATER = frozenset({*_PROMPT_FLAGS, "--dangerously-skip-permissions"})

# Set by the SDK or the launcher already: --print is the launcher's (ClaudeArgs.headless), the SDK always
# runs Claude with --verbose, and remote mode always asks for partial messages and subagent text.
_ALREADY_SET = frozenset({"--print", "--verbose", "--include-partial-messages", "--forward-subagent-text"})

_SDK_PROTOCOL = "the SDK sets its own, to talk to Claude"
_TUI_ONLY = "Claude's terminal UI only"
_IGNORED = MappingProxyType(
    {
        "--output-format": _SDK_PROTOCOL,
        "--input-format": _SDK_PROTOCOL,
        "--replay-user-messages": _SDK_PROTOCOL,
        "--include-hook-events": _SDK_PROTOCOL,
        "--permission-prompt-tool": "happy answers permission prompts itself",
        "--ax-screen-reader": _TUI_ONLY,
        "--ide": _TUI_ONLY,
        "--tmux": _TUI_ONLY,
        "--remote-control": _TUI_ONLY,
        "--remote-control-session-name-prefix": _TUI_ONLY,
        "--version": "run `claude --version`",
    }
)

_ELSEWHERE = "it runs the session outside happy"
_REFUSED = MappingProxyType(
    {
        "--background": _ELSEWHERE,
        "--cloud": _ELSEWHERE,
        "--remote": _ELSEWHERE,
        "--teleport": _ELSEWHERE,
        "--environment": _ELSEWHERE,
        "--desktop": _ELSEWHERE,
        "--from-pr": "it picks the session to resume: use --resume <session id>",
        "--worktree": "it moves the session to a new worktree: run happy inside that worktree instead",
        "--no-session-persistence": "happy follows the session through its transcript, which this turns off",
        "--resume-session-at": "it truncates the resumed conversation on every launch: use local mode",
    }
)

_ALIASES = MappingProxyType(
    {"--allowed-tools": "--allowedTools", "--disallowed-tools": "--disallowedTools", "--bg": "--background"}
)
_REPEATABLE = frozenset({"--plugin-url"})  # given more than once, Claude takes every value
