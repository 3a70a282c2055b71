"""The control verbs: `happy sessions|send|watch|switch|abort|approve|deny`. Thin: parse, run the
verb (control/verbs.py), print. SESSION is a unique prefix of a happy or Claude session id, and
defaults to the only running session.

Each verb imports what it runs only when it runs (the control client, the store, anyio): a verb's
start-up pays for its own subsystem, not for every verb's (`happy watch`'s first line)."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from happy_launcher.cli.errors import fail
from happy_launcher.cli.parsing import Parser, optional, parser
from happy_launcher.errors import HappyError, UsageError

if TYPE_CHECKING:
    from happy_launcher.control import verbs
    from happy_launcher.control.views import SessionView
    from happy_launcher.session.ports import InputMode

_T = TypeVar("_T")


SESSION = "A unique prefix of a happy or Claude session id (default: the only running one)."
REQUEST = "The permission request's id (default: the only pending one)."


def _run(verb: Callable[[Path], Awaitable[_T]]) -> _T:
    import anyio

    from happy_launcher.home.dirs import happy_home

    try:
        return anyio.run(verb, happy_home(os.environ))
    except HappyError as error:
        raise fail(error) from None


def sessions(prog: str, argv: list[str]) -> int:
    """List running and recent sessions: ids, state, mode, pid, started, last activity, cwd, title."""
    p = parser(prog, sessions)
    p.add_argument("--json", dest="as_json", action="store_true", help="One JSON object per session.")
    as_json = p.parse_args(argv).as_json
    from happy_launcher.control.views import from_store
    from happy_launcher.home.dirs import happy_home
    from happy_launcher.session.naming import TranscriptTitles, session_title

    # The store describes every live launcher: no event loop, no control client.
    views = from_store(happy_home(os.environ))
    if views is None:
        from happy_launcher.control import verbs

        views = _run(verbs.sessions)
    reader = TranscriptTitles()
    titles = [session_title(view.first_prompt, view.transcript, reader) for view in views]
    if as_json:
        import orjson

        for view, title in zip(views, titles, strict=True):
            row = {k: v for k, v in view._asdict().items() if k not in _NOT_LISTED}
            print(orjson.dumps({**row, "title": title}).decode())
        return 0
    print(_table(views, titles))
    return 0


_NOT_LISTED = frozenset({"socket", "first_prompt", "transcript"})  # the title stands for them


def _table(views: list[SessionView], titles: list[str | None]) -> str:
    from happy_launcher.terminal.plain_text import visible

    rows = [("HAPPY ID", "CLAUDE ID", "STATE", "MODE", "PID", "STARTED", "LAST ACTIVITY", "CWD", "TITLE")]
    for v, title in zip(views, titles, strict=True):
        rows.append(
            (
                v.happy_id or "-",
                v.claude_id or "-",
                v.state,
                v.mode or "-",
                str(v.pid or "-"),
                _when(v.started_at),
                _when(v.last_activity),
                v.cwd,
                visible(title or "-"),  # the user's or Claude's text: shown, never obeyed
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows
    ]
    # Never silent: a conversation that broke at a switch is named under the table.
    lines += [f"! {v.name}: {v.continuity_break}" for v in views if v.continuity_break]
    return "\n".join(lines)


def _when(ms: int | None) -> str:
    from datetime import datetime

    return "-" if ms is None else datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _send_parser(prog: str) -> Parser:
    p = parser(prog, send)
    p.add_argument(
        "words", nargs="*", metavar="[SESSION] [TEXT]", help="TEXT, or SESSION then TEXT (- or none: stdin)."
    )
    p.add_argument(
        "--id", dest="message_id", metavar="ID", help="Your id for the message: sending it again is a no-op."
    )
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--inject",
        dest="mode",
        action="store_const",
        const="inject",
        help="In local mode: type it into the live TUI (default: the session's --happy-remote-input).",
    )
    how.add_argument(
        "--switch",
        dest="mode",
        action="store_const",
        const="switch",
        help="In local mode: hand the session to remote mode.",
    )
    p.add_argument(
        "--permission-mode",
        metavar="MODE",
        help="Claude's permission mode from this message on, in remote mode (the TUI keeps its own): "
        "default, acceptEdits, bypassPermissions, plan (Happy's yolo, safe-yolo, read-only too).",
    )
    p.add_argument(
        "--model", help="Claude's model (a name or an alias) from this message on, as --permission-mode."
    )
    return p


def send(prog: str, argv: list[str]) -> int:
    """Send a user message (at most 1 MiB) to a running session (TEXT, or stdin when TEXT is absent or -)."""
    args = _send_parser(prog).parse_intermixed_args(argv)
    words: list[str] = args.words
    if len(words) > 2:
        raise fail(UsageError("give at most SESSION and TEXT: quote a TEXT of several words"))
    selector, text = (words[0], words[1]) if len(words) == 2 else (None, words[0] if words else None)
    if text is None or text == "-":
        if sys.stdin.isatty():  # else it would look stuck
            print(
                "happy: type the message, then Ctrl-D on a line of its own (Ctrl-C cancels)", file=sys.stderr
            )
        text = _read_stdin()
    if not text.strip():
        raise fail(UsageError("nothing to send: give TEXT, or pipe it on stdin"))
    import uuid

    from happy_launcher.control import verbs

    mid: str = args.message_id or str(uuid.uuid4())
    mode: InputMode | None = args.mode
    permission_mode, model = args.permission_mode, args.model
    accepted = _run(
        lambda home: verbs.send(home, selector, text, mid, mode, permission_mode=permission_mode, model=model)
    )
    print(f"{'already accepted' if accepted.duplicate else 'accepted'}: message {mid}")
    return 0


def _read_stdin() -> str:
    """All of stdin, a line at a time: Python sees a Ctrl-C between two reads. (`read()` reads it
    all in C, and a SIGINT that comes with the last line is not seen before the next read blocks.)"""
    lines = []
    for line in sys.stdin:  # a Python loop, not list(sys.stdin): see above
        lines.append(line)
    return "".join(lines)


def watch(prog: str, argv: list[str]) -> int:
    """Follow a session's envelopes until it ends (an ended session: its history). Without SESSION:
    the session of this directory (the running one, else the latest), else the only running one."""
    p = optional(parser(prog, watch), "session", SESSION)
    p.add_argument("--from-start", action="store_true", help="The whole history first.")
    p.add_argument(
        "--json", dest="as_json", action="store_true", help="Envelope JSON lines, exactly as stored."
    )
    args = p.parse_args(argv)
    session, from_start = args.session, args.from_start
    output = _watch_output(args.as_json)
    here = str(Path.cwd())
    from happy_launcher.home.dirs import happy_home

    home = happy_home(os.environ)
    try:
        view = _from_store(home, session, here)
        if view is not None and not view.running and view.happy_id is not None:
            # An ended session's history: the first line comes without the event loop or the client.
            from happy_launcher.control.history import stored_envelopes

            for seq, body in stored_envelopes(home, view.happy_id, 0):
                output.envelope(seq, body)
        else:
            from happy_launcher.control import verbs

            _run(lambda home: verbs.watch(home, session, output, from_start=from_start, cwd=here, view=view))
    except (BrokenPipeError, KeyboardInterrupt):
        pass  # the reader has what it wanted, or the user stopped watching
    except HappyError as error:  # the stored history's (the client's are `_run`'s)
        raise fail(error) from None
    return 0


def _from_store(home: Path, selector: str | None, cwd: str) -> SessionView | None:
    """The session `watch` names, when the store describes every live launcher; None: only the
    launchers can say (`discover`)."""
    from happy_launcher.control.views import from_store, resolve_here

    try:
        views = from_store(home)
        return None if views is None else resolve_here(views, selector, cwd)
    except HappyError as error:
        raise fail(error) from None


def _watch_output(as_json: bool) -> verbs.WatchOutput:
    if as_json:  # no rich to load: the lines are the envelopes as stored
        from happy_launcher.cli.watch_json import JsonLines

        return JsonLines()
    from happy_launcher.cli.watch_print import Pretty

    return Pretty()


def switch(prog: str, argv: list[str]) -> int:
    """Move a running session to local (the TUI) or remote mode. Says what it did: "switched to
    remote", or "already in remote mode" (exit 0 for both)."""
    p = optional(parser(prog, switch), "session", SESSION)
    p.add_argument(
        "--to", choices=("local", "remote"), default="remote", help="The front end to move it to (remote)."
    )
    args = p.parse_args(argv)
    session, to = args.session, args.to
    from happy_launcher.control import verbs

    done = _run(lambda home: verbs.switch(home, session, to))
    print(f"already in {to} mode" if done == "already-there" else f"switched to {to}")
    return 0


def abort(prog: str, argv: list[str]) -> int:
    """End the running turn of a session (cancelled). Says what it did: "aborted the running turn",
    or "no turn is running" (exit 0 for both)."""
    session = optional(parser(prog, abort), "session", SESSION).parse_args(argv).session
    from happy_launcher.control import verbs

    done = _run(lambda home: verbs.abort(home, session))
    print("no turn is running" if done == "no-turn" else "aborted the running turn")
    return 0


def approve(prog: str, argv: list[str]) -> int:
    """Allow a pending permission request."""
    args = optional(optional(parser(prog, approve), "session", SESSION), "request", REQUEST).parse_args(argv)
    session, request = args.session, args.request
    from happy_launcher.control import verbs

    answered = _run(lambda home: verbs.answer(home, session, request, True, None))
    print(f"allowed {answered}")
    return 0


def deny(prog: str, argv: list[str]) -> int:
    """Deny a pending permission request."""
    p = optional(optional(parser(prog, deny), "session", SESSION), "request", REQUEST)
    p.add_argument("--message", "-m", help="Why (Claude sees it).")
    args = p.parse_args(argv)
    session, request, message = args.session, args.request, args.message
    from happy_launcher.control import verbs

    answered = _run(lambda home: verbs.answer(home, session, request, False, message))
    print(f"denied {answered}")
    return 0
