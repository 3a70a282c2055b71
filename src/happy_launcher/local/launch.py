"""The session flags of each launch of Claude, made from the intent parsed once at start.

A fresh or forked session gets a pre-assigned id so its transcript is known before Claude starts;
a relaunch is a plain `--resume <id>` (`--session-id <id>` before the first prompt) without the
opening prompt (design §3).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from happy_launcher.claude.args import ClaudeArgs, SessionIntent, is_uuid, new_uuid4
from happy_launcher.claude.cli_flags import looks_like_option
from happy_launcher.claude.paths import transcript_path

if TYPE_CHECKING:
    from happy_launcher.session.launcher import ClaudeStart


class Launch(NamedTuple):
    """The session flags of ONE launch of Claude."""

    mode: Literal["fresh", "resume", "continue"]
    # mode "resume": what to resume (an id, a name or a search term); None opens Claude's picker.
    target: str | None = None
    # --session-id: the id the launched session gets (a new session, or the new session of a fork).
    session_id: str | None = None
    fork: bool = False
    with_prompt: bool = True  # send the user's opening prompt (first launch only)

    @property
    def expected_session_id(self) -> str | None:
        """The session id Claude will run under, when it is known before launch (else: learn it from
        the SessionStart hook). Resuming by uuid without forking keeps the id (Claude 2.1.329)."""
        if self.session_id is not None:
            return self.session_id
        if self.mode == "resume" and not self.fork and self.target is not None and is_uuid(self.target):
            return self.target
        return None

    @property
    def start_source(self) -> str:
        """How Claude's SessionStart hook will name the way this launch came to its session."""
        return "fork" if self.fork else "startup" if self.mode == "fresh" else "resume"

    @property
    def known_sessions(self) -> tuple[str, ...] | None:
        """The sessions whose transcripts this launch reads, when known before it (a fork's
        original first, then the session Claude runs under); None when Claude picks."""
        expected = self.expected_session_id
        if expected is None:
            return None
        return (self.target, expected) if self.fork and self.target is not None else (expected,)


def launch_plan(intent: SessionIntent, *, new_id: Callable[[], str] = new_uuid4) -> Launch:
    """The first launch for ``intent``. A new session (fresh, or a fork) gets a pre-assigned id (the user's
    --session-id, else ``new_id()``) so its id is known before Claude starts."""
    if intent.kind == "fresh":
        return Launch("fresh", session_id=intent.session_id or new_id())
    new_session = (intent.session_id or new_id()) if intent.fork else None
    if intent.kind == "continue":
        return Launch("continue", session_id=new_session, fork=intent.fork)
    return Launch("resume", target=intent.resume_id, session_id=new_session, fork=intent.fork)


def relaunch(session_id: str, *, has_transcript: bool) -> Launch:
    """A later launch of the same session: plain ``--resume <id>``, never the user's original session
    flags nor the opening prompt. Before its first prompt the session has no transcript, and Claude
    cannot resume it: it starts under that id (``--session-id``), as remote mode does."""
    if not has_transcript:
        return Launch("fresh", session_id=session_id, with_prompt=False)
    return Launch("resume", target=session_id, with_prompt=False)


def claude_argv(
    binary: str | os.PathLike[str], args: ClaudeArgs, launch: Launch, *, settings: str | None
) -> list[str]:
    """The full argv of one launch: binary, session flags, ONE ``--settings`` (if any), then the
    passthrough.

    Session flags come first and are followed by ``--settings``, so a bare ``--resume`` can never take a
    passthrough token as its value.
    """
    argv = [os.fspath(binary)]
    if launch.mode == "resume":
        if launch.target is None:
            argv.append("--resume")
        elif looks_like_option(launch.target):
            argv.append(f"--resume={launch.target}")  # "--resume -x" would open the picker, not resume "-x"
        else:
            argv.extend(["--resume", launch.target])
    elif launch.mode == "continue":
        argv.append("--continue")
    if launch.fork:
        argv.append("--fork-session")
    if launch.session_id is not None:
        argv.extend(["--session-id", launch.session_id])
    if settings is None and launch.mode == "resume" and launch.target is None:
        settings = "{}"  # an option must follow a bare --resume, or it takes the prompt as its value
    if settings is not None:
        argv.extend(["--settings", settings])
    argv.extend(args.passthrough if launch.with_prompt else args.relaunch_passthrough)
    return argv


def claude_start(launch: Launch, env: Mapping[str, str], cwd: Path) -> ClaudeStart | None:
    """What `launch` runs on, when known before the spawn (None: Claude picks, and says which)."""
    # Imported here: a headless run spawns Claude before the session's modules load (logging, dataclasses).
    from happy_launcher.session.launcher import ClaudeStart

    expected = launch.expected_session_id
    if expected is None:
        return None
    return ClaudeStart(expected, launch.start_source, transcript_path(env, cwd, expected))
