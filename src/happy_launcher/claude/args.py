"""Parse the `happy claude` argv into happy's options, a session intent and what passes to Claude.

Claude Code parses its argv with commander.js; this module follows commander's rules wherever the meaning
of a token depends on them, so that `happy claude ARGS` means what `claude ARGS` means:

- an option with an OPTIONAL value (``--resume``/``-r``) takes the next token as its value unless that token
  looks like an option (longer than one character and starting with ``-``). So ``--resume fix-it`` resumes
  "fix-it" (a session id, a name or a picker search term: Claude decides), never a prompt. A prompt after a
  bare ``--resume`` must come first or after ``--`` (``--resume -- "prompt"``), exactly as with Claude;
- an option with a REQUIRED value takes the next token whatever it looks like (``--system-prompt -c``);
- short flags cluster (``-pc`` = ``-p -c``) and a short option with a value takes the rest of its token
  (``-r<id>``);
- ``--`` ends option parsing: everything after it passes through untouched.

Claude's option tables (which options take a value) live in `claude/cli_flags.py`.

Session flags are parsed once into a :class:`SessionIntent`; each launch re-creates its own session flags
(see `local/launch.py`), so a relaunch never repeats the user's.
Positional tokens (the opening prompt) are tracked too: a relaunch leaves them out, or it would submit the
opening prompt a second time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Literal, NamedTuple

from happy_launcher.claude.cli_flags import OPTIONAL_VALUE, SHORT, VALUE_OPTIONS, VARIADIC, looks_like_option
from happy_launcher.errors import UsageError

__all__ = [
    "HELP",
    "ClaudeArgs",
    "HappyOptions",
    "SessionIntent",
    "parse_happy_claude_args",
]

HELP = """\
Usage: happy claude [happy options] [claude options] [prompt]

Runs Claude Code and mirrors the session. Every option below is happy's own; everything else goes to
Claude unchanged (see `claude --help`). Without a terminal, or with -p, Claude runs on happy's own
stdin/stdout/stderr (output byte for byte as `claude`'s), and the session is still mirrored.

  --happy-events PATH|fd:N     also write the session's envelopes as JSON lines to PATH, or to file
                               descriptor N (3 or more) that you opened: `--happy-events fd:3 3>ev.jsonl`
  --happy-home DIR             happy's state directory (default: $HAPPY_HOME_DIR or ~/.happy)
  --happy-replay-existing      when resuming, also emit the envelopes of what the session already holds
  --happy-remote               start in remote mode (Claude through the Agent SDK): a live view of the
                               session in the terminal, prompts typed on its input line (without a
                               terminal: one prompt per line of stdin)
  --happy-remote-input inject|switch
                               how the TUI takes a message sent from elsewhere (`happy send`):
                               `switch` (default) moves the session to remote mode; `inject` types it
                               into the live TUI, keeping your draft (`happy send --inject|--switch`
                               chooses per message)
  --happy-no-sync              do not start the bridge to Happy's server for this run (`happy claude`
                               starts it, detached, when `happy auth login` was done and none runs;
                               see `happy daemon --help`)
  --happy-enable-hooks         force hooks on (disableAllHooks: false) so session changes are followed even
                               when your settings disable all hooks; re-enables your own hooks too
  --yolo                       same as --dangerously-skip-permissions
  -h, --help                   this help

The session can be driven from elsewhere while it runs (`happy sessions`, `happy send`, `happy watch`,
`happy switch`, `happy abort`, `happy approve|deny`): a message sent to it moves it to remote mode
(or is typed into the TUI: --happy-remote-input);
Ctrl-T (or Space twice) in remote mode brings it back to Claude's own TUI, on the same Claude session.
"""

# fmt: off
# happy's own flags: name -> takes a value.
_HAPPY_FLAGS = MappingProxyType({
    "--happy-events": True, "--happy-home": True, "--happy-replay-existing": False,
    "--happy-enable-hooks": False, "--happy-remote": False, "--happy-remote-input": True,
    "--happy-no-sync": False,
})
REMOTE_INPUTS = ("inject", "switch")
# fmt: on


# The records below are NamedTuples, not dataclasses: they are made before Claude is spawned, and
# `dataclasses` (with `inspect`) and the making of each class cost ~25 ms of Claude's start-up.


class HappyOptions(NamedTuple):
    """happy's own options (``--happy-*``, ``--help``)."""

    events: str | None = None  # --happy-events PATH|fd:N (checked when opened: session/events_output.py)
    home: Path | None = None  # --happy-home DIR
    replay_existing: bool = False  # --happy-replay-existing
    enable_hooks: bool = False  # --happy-enable-hooks: overlay sets disableAllHooks=false
    remote: bool = False  # --happy-remote: Claude through the Agent SDK
    remote_input: Literal["inject", "switch"] = "switch"  # --happy-remote-input
    no_sync: bool = False  # --happy-no-sync: no bridge to Happy's server started by this run
    show_help: bool = False  # --help / -h: happy's help, which points to `claude --help`


class SessionIntent(NamedTuple):
    """What the user asked for, session-wise, parsed once at start."""

    kind: Literal["fresh", "resume", "continue"] = "fresh"
    # --resume's value: a session id, a session name or a picker search term; None = bare --resume (picker).
    resume_id: str | None = None
    # The user's own --session-id: the id of the fresh session, or of the new session when forking.
    session_id: str | None = None
    fork: bool = False  # --fork-session (only with resume/continue; Claude ignores it otherwise, so do we)


class ClaudeArgs(NamedTuple):
    """The parsed `happy claude` argv."""

    passthrough: tuple[str, ...]  # to Claude, in order, minus session/happy flags and --settings
    user_settings: str | None  # the user's --settings value (a path or inline JSON), merged into our overlay
    intent: SessionIntent = SessionIntent()
    options: HappyOptions = HappyOptions()
    headless: bool = False  # -p/--print given (stays in passthrough)
    # Indexes in `passthrough` of positional tokens (the prompt; `--` and all after it): the first launch
    # sends them, a relaunch must not (it would submit the opening prompt again).
    prompt_positions: tuple[int, ...] = ()

    @property
    def prompt(self) -> tuple[str, ...]:
        """The positional tokens (normally one: the opening prompt), without ``--``."""
        return tuple(self.passthrough[i] for i in self.prompt_positions if self.passthrough[i] != "--")

    @property
    def relaunch_passthrough(self) -> tuple[str, ...]:
        """``passthrough`` without the positional tokens."""
        skip = set(self.prompt_positions)
        return tuple(t for i, t in enumerate(self.passthrough) if i not in skip)


class _Builder:
    """Mutable state of one parse (local to the call)."""

    def __init__(self) -> None:
        self.passthrough: list[str] = []
        self.settings: str | None = None
        self.resume = False
        self.resume_id: str | None = None
        self.cont = False
        self.session_id: str | None = None
        self.fork = False
        self.headless = False
        self.happy: dict[str, str | bool] = {}
        self.prompt_positions: list[int] = []
        self.variadic = False  # the last option was variadic: plain tokens are its values

    def positional(self, tokens: Sequence[str]) -> None:
        start = len(self.passthrough)
        self.passthrough.extend(tokens)
        self.prompt_positions.extend(range(start, len(self.passthrough)))


def _required_value(argv: Sequence[str], i: int, name: str) -> str:
    if i + 1 >= len(argv):
        raise UsageError(f"{name} needs a value")
    return argv[i + 1]


def _happy_flag(b: _Builder, name: str, value: str | None, argv: Sequence[str], i: int) -> int:
    """Handle ``--happy-*`` at ``argv[i]`` (``value`` from ``--x=value``); returns the next index."""
    if name not in _HAPPY_FLAGS:
        known = ", ".join(_HAPPY_FLAGS)
        raise UsageError(f"unknown option {name}: happy's options are {known} (see `happy claude --help`)")
    if not _HAPPY_FLAGS[name]:
        if value is not None:
            raise UsageError(f"{name} takes no value")
        b.happy[name] = True
        return i + 1
    step = 1
    if value is None:
        if i + 1 >= len(argv) or looks_like_option(argv[i + 1]):
            raise UsageError(f"{name} needs a value")
        value, step = argv[i + 1], 2
    if not value:
        raise UsageError(f"{name} needs a non-empty value")
    b.happy[name] = value
    return i + step


def _long(b: _Builder, argv: Sequence[str], i: int) -> int:
    """Handle the ``--long`` option at ``argv[i]``; returns the next index."""
    token = argv[i]
    name, eq, attached = token.partition("=")
    value = attached if eq else None
    if name.startswith("--happy-"):
        return _happy_flag(b, name, value, argv, i)
    if token == "--yolo":
        b.passthrough.append("--dangerously-skip-permissions")
    elif token == "--help":
        b.happy["--help"] = True
    elif token == "--continue":
        b.cont = True
    elif token == "--fork-session":
        b.fork = True
    elif name == "--resume":
        if value is None and i + 1 < len(argv) and not looks_like_option(argv[i + 1]):
            value, i = argv[i + 1], i + 1
        b.resume, b.resume_id = True, value or None
    elif name in ("--session-id", "--settings"):
        if value is None:
            value, i = _required_value(argv, i, name), i + 1
        if name == "--settings":
            b.settings = value  # given twice: the last one counts, as in Claude
        else:
            b.session_id = value
    elif name in VALUE_OPTIONS and value is None:
        b.passthrough.extend([token, _required_value(argv, i, name)])
        b.variadic = name in VARIADIC
        return i + 2
    elif name in OPTIONAL_VALUE and value is None:
        return _optional_value(b, [token], argv, i)
    else:
        b.headless = b.headless or token == "--print"
        b.passthrough.append(token)
    return i + 1


def _short(b: _Builder, argv: Sequence[str], i: int) -> int:
    """Handle ``-x`` or a cluster ``-xyz`` at ``argv[i]``; returns the next index."""
    letters = argv[i][1:]
    if not _known_cluster(letters):
        b.passthrough.append(argv[i])  # unknown to us: Claude will judge it
        return i + 1
    for pos, ch in enumerate(letters):
        kind = SHORT[ch]
        if kind != "bool":
            return _short_with_value(b, ch, letters[pos + 1 :], argv, i)
        if ch == "c":
            b.cont = True
        elif ch == "h":
            b.happy["--help"] = True
        else:
            b.headless = b.headless or ch == "p"
            b.passthrough.append(f"-{ch}")
    return i + 1


def _short_with_value(b: _Builder, ch: str, rest: str, argv: Sequence[str], i: int) -> int:
    """A short option that takes a value: the rest of its token is the value (commander), else maybe the
    next token. Returns the next index."""
    kind = SHORT[ch]
    if ch == "r":
        if not rest and i + 1 < len(argv) and not looks_like_option(argv[i + 1]):
            rest, i = argv[i + 1], i + 1
        b.resume, b.resume_id = True, rest or None
    elif rest:
        b.passthrough.append(f"-{ch}{rest}")
    elif kind == "required":
        b.passthrough.extend([f"-{ch}", _required_value(argv, i, f"-{ch}")])
        i += 1
    else:
        return _optional_value(b, [f"-{ch}"], argv, i)
    return i + 1


def _optional_value(b: _Builder, kept: list[str], argv: Sequence[str], i: int) -> int:
    """Pass ``kept`` (an option with an optional value) through with the next token as its value unless
    that token looks like an option, as commander does. Returns the next index."""
    if i + 1 < len(argv) and not looks_like_option(argv[i + 1]):
        kept.append(argv[i + 1])
        i += 1
    b.passthrough.extend(kept)
    return i + 1


def _known_cluster(letters: str) -> bool:
    """Whether every letter of ``-xyz`` up to (and including) the first value-taking one is a short flag
    we know; the rest of the token is then that option's value."""
    for ch in letters:
        if ch not in SHORT:
            return False
        if SHORT[ch] != "bool":
            return True
    return True


def _intent(b: _Builder) -> SessionIntent:
    if b.resume and b.cont:
        raise UsageError("--resume and --continue can't be combined: use one of them")
    kind: Literal["fresh", "resume", "continue"] = "resume" if b.resume else "continue" if b.cont else "fresh"
    if b.session_id is not None:
        if not is_uuid(b.session_id):
            raise UsageError(f"--session-id {b.session_id!r} is not a valid UUID (like {new_uuid4()})")
        if kind != "fresh" and not b.fork:
            raise UsageError(f"--session-id with --{kind} also needs --fork-session")
    return SessionIntent(
        kind=kind, resume_id=b.resume_id, session_id=b.session_id, fork=b.fork and kind != "fresh"
    )


def parse_happy_claude_args(argv: Sequence[str]) -> ClaudeArgs:
    """Parse the arguments after `happy claude`. Raises :class:`UsageError` on a bad command line."""
    b = _Builder()
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            b.positional(argv[i:])
            break
        if not looks_like_option(token):
            if b.variadic:
                b.passthrough.append(token)
            else:
                b.positional([token])
            i += 1
            continue
        b.variadic = False
        i = _long(b, argv, i) if token.startswith("--") else _short(b, argv, i)
    events, home = b.happy.get("--happy-events"), b.happy.get("--happy-home")
    remote_input = b.happy.get("--happy-remote-input", "switch")
    if remote_input not in REMOTE_INPUTS:
        raise UsageError(f"--happy-remote-input takes inject or switch, not {remote_input!r}")
    options = HappyOptions(
        events=events if isinstance(events, str) else None,
        home=Path(home).expanduser() if isinstance(home, str) else None,
        replay_existing=bool(b.happy.get("--happy-replay-existing")),
        enable_hooks=bool(b.happy.get("--happy-enable-hooks")),
        remote=bool(b.happy.get("--happy-remote")),
        remote_input="inject" if remote_input == "inject" else "switch",
        no_sync=bool(b.happy.get("--happy-no-sync")),
        show_help=bool(b.happy.get("--help")),
    )
    return ClaudeArgs(
        passthrough=tuple(b.passthrough),
        user_settings=b.settings,
        intent=_intent(b),
        options=options,
        headless=b.headless,
        prompt_positions=tuple(b.prompt_positions),
    )


# The uuid module imports `platform` (a few ms): these run before Claude starts, so they do without.
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def is_uuid(value: str) -> bool:
    """A uuid in the canonical 8-4-4-4-12 form (Python's UUID() also accepts braces, urn: and no dashes)."""
    return _CANONICAL_UUID.fullmatch(value) is not None


def new_uuid4() -> str:
    """A random (version 4) uuid, canonical form."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
