"""Claude Code's option grammar (CLI 2.1.329, commander.js), and the pass-through argv split into options.

`claude/args.py` parses the `happy claude` argv with these tables; :func:`split_flags` regroups what it
passes through (``ClaudeArgs.passthrough``, already normalised: session and happy flags removed, short
clusters split) into one :class:`ClaudeFlag` per option, so remote mode can map each to the SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import NamedTuple

__all__ = [
    "OPTIONAL_VALUE",
    "SHORT",
    "SHORT_NAMES",
    "VALUE_OPTIONS",
    "VARIADIC",
    "ClaudeFlag",
    "looks_like_option",
    "split_flags",
]

# Options that take a REQUIRED value (`claude --help`, plus the hidden ones defined with a value that docs
# or the SDK use): the next token is their value whatever it looks like. An option not listed is taken as
# a flag; its value then passes through as a positional (same order, same meaning on the first launch).
# fmt: off
VALUE_OPTIONS = frozenset({
    "--add-dir", "--agent", "--agents", "--allowedTools", "--allowed-tools", "--append-system-prompt",
    "--autocompact", "--betas", "--debug-file", "--disallowedTools", "--disallowed-tools", "--effort",
    "--environment", "--fallback-model", "--file", "--input-format", "--json-schema", "--max-budget-usd",
    "--mcp-config", "--model", "--name", "--output-format", "--permission-mode", "--permission-prompts",
    "--plugin-dir", "--plugin-url", "--remote-control-session-name-prefix", "--setting-sources",
    "--system-prompt", "--system-prompt-snapshot", "--tools", "--append-system-prompt-file",
    "--system-prompt-file", "--permission-prompt-tool", "--max-turns", "--max-thinking-tokens",
    "--resume-session-at", "--thinking", "--thinking-display", "--task-budget",
})

# Variadic ones among them: after `--opt v1`, commander keeps taking tokens until one looks like an option
# (`--add-dir a b "fix it"` makes "fix it" a directory, not a prompt). The `--opt=v` form does not.
VARIADIC = frozenset({
    "--add-dir", "--allowedTools", "--allowed-tools", "--betas", "--disallowedTools", "--disallowed-tools",
    "--file", "--mcp-config", "--tools",
})

# Options with an OPTIONAL value (besides --resume): the next token is theirs unless it looks like an option.
OPTIONAL_VALUE = frozenset({
    "--cloud", "--debug", "--from-pr", "--prompt-suggestions", "--remote-control", "--teleport", "--worktree",
})

# Short flags, for splitting clusters like -pc: "bool", "optional" (value) or "required" (value).
SHORT = MappingProxyType({
    "c": "bool", "p": "bool", "h": "bool", "v": "bool", "d": "optional", "r": "optional", "w": "optional",
    "n": "required",
})
SHORT_NAMES = MappingProxyType({
    "c": "--continue", "p": "--print", "h": "--help", "v": "--version", "d": "--debug", "r": "--resume",
    "w": "--worktree", "n": "--name",
})
# fmt: on


def looks_like_option(token: str) -> bool:
    # commander's maybeOption(): "-" alone is a value (stdin/stdout), "-x" and "--x" are options.
    return len(token) > 1 and token.startswith("-")


class ClaudeFlag(NamedTuple):
    """One option of the pass-through argv. (Not a dataclass: this module is loaded before Claude
    starts, and `dataclasses` costs ~15 ms of that.)"""

    token: str  # as written (``--model``, ``--model=x``, ``-nfoo``): for messages
    name: str  # the long name (``-n`` gives ``--name``); an unknown short flag keeps its own token
    values: tuple[str, ...] = ()  # none for a flag or an optional value left out


def split_flags(passthrough: Sequence[str], positions: Sequence[int] = ()) -> tuple[ClaudeFlag, ...]:
    """Group ``passthrough`` (as ``claude/args.py`` leaves it) into options; the tokens at ``positions``
    (the prompt, ``--`` and all after it) are not options and are left out."""
    skip = set(positions)

    def value_at(j: int) -> bool:
        return j < len(passthrough) and j not in skip and not looks_like_option(passthrough[j])

    flags: list[ClaudeFlag] = []
    i = 0
    while i < len(passthrough):
        if i in skip:
            i += 1
            continue
        token = passthrough[i]
        name, kind, inline = _shape(token)
        values = [] if inline is None else [inline]
        i += 1
        if inline is None and kind != "bool" and i < len(passthrough):
            # A required value is taken whatever it looks like (args.py kept it next to its option).
            if kind != "optional" or value_at(i):
                values.append(passthrough[i])
                i += 1
            while kind == "variadic" and value_at(i):
                values.append(passthrough[i])
                i += 1
        flags.append(ClaudeFlag(token, name, tuple(values)))
    return tuple(flags)


def _shape(token: str) -> tuple[str, str, str | None]:
    """(long name, kind, value written in the token) of an option token."""
    if token.startswith("--"):
        name, eq, value = token.partition("=")
        kind = _kind(name)
        return name, kind, value if eq else None
    letter, rest = token[1:2], token[2:]
    if letter not in SHORT:
        return token, "bool", None
    name = SHORT_NAMES[letter]
    if SHORT[letter] == "bool":
        return name, "bool", None
    return name, _kind(name), rest or None


def _kind(name: str) -> str:
    if name in VARIADIC:
        return "variadic"
    if name in VALUE_OPTIONS:
        return "required"
    if name in OPTIONAL_VALUE:
        return "optional"
    return "bool"
