"""The ``--settings`` overlay that installs happy's SessionStart (and UserPromptSubmit) hook, and the
channel the hook writes to.

Claude honours only the last ``--settings`` (claude-offline.md §6), so the user's own ``--settings`` is merged
into ours: per-event hook arrays are concatenated, every other key is kept. The hook appends each payload
to a private events file; the launcher tails that file (``claude/``) and parses lines with
:func:`parse_hook_line`.

``disableAllHooks``: in Claude 2.1.329 it is all-or-nothing (verified): ``true`` from any settings source
disables the overlay's hooks too, and an overlay ``false`` re-enables EVERY hook, the user's global and
project ones included. The overlay therefore leaves the user's choice alone by default (re-running hooks a
user switched off, with their side effects, is worse than happy not following ``/clear``; the launcher can
tell, since no SessionStart event arrives), and forces ``false`` only when asked (``--happy-enable-hooks``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self

from happy_launcher.errors import InputFileError, UsageError
from happy_launcher.home.files import write_private

__all__ = [
    "HOOK_TIMEOUT_S",
    "PERMISSION_HOOK_TIMEOUT_S",
    "HookChannel",
    "HookEvent",
    "build_settings_overlay",
    "hook_command",
    "parse_hook_line",
    "permission_hook_command",
]

# Seconds before Claude kills our hook. It never blocks on its own (one small append), but a stuck
# filesystem must not hold up the first prompt, which waits for SessionStart hooks.
HOOK_TIMEOUT_S = 5
# The PermissionRequest hook waits for a client's answer while the TUI's dialog is up, for as long
# as the user may leave it there (approving from elsewhere is the point). Claude's default is 600 s;
# at the timeout Claude kills the hook and only its dialog is left (the request is withdrawn).
PERMISSION_HOOK_TIMEOUT_S = 24 * 3600
_PERMISSION_HOOK = Path(__file__).with_name("permission_hook.py")


def permission_hook_command(script: Path, socket: Path, python: str = sys.executable) -> str:
    """The PermissionRequest hook's command: our stdlib-only script (`permission_hook.py`) asking
    the control socket at `socket`. `exec`: Claude kills the hook on Esc, and the kill must reach
    the process holding the socket (its EOF withdraws the request). `-S -I`: no site, no user
    paths: ~10 ms to start. The script goes with its run: a Claude started later from a kept
    overlay (its resume hint) finds none, and the hook exits 0 at once (the dialog decides)."""
    words = [python, "-S", "-I", os.fspath(script), os.fspath(socket)]
    return f"test -f {shlex.quote(os.fspath(script))} || exit 0; exec {shlex.join(words)}"


def hook_command(events_path: Path) -> str:
    """The shell command of our hook: append the payload (stdin) to ``events_path`` as one line.

    - ``echo`` before and after: each payload lands on a line of its own even if an earlier run was killed
      mid-write; Claude's payload is single-line JSON ending in a newline, so blank lines separate records.
    - ``2>/dev/null`` BEFORE the redirection silences "No such file" when the launcher (and its directory)
      is gone; ``|| cat >/dev/null`` then still drains stdin, and ``exit 0`` keeps Claude's hook status clean.
    - Nothing goes to stdout: a SessionStart hook's stdout would be added to Claude's context.
    Cost: ~3 ms per run (one ``sh`` and one ``cat``).
    """
    target = shlex.quote(os.fspath(events_path))
    return f"{{ echo; cat; echo; }} 2>/dev/null >>{target} || cat >/dev/null 2>&1; exit 0"


class HookChannel:
    """A private directory (0700) holding the events file (0600) our hook appends to, and the overlay file.

    ``HookChannel(runtime_dir)`` creates ``<runtime_dir>/<pid>-<random>/``; :meth:`close` (or leaving the
    ``with`` block, on any exit path) removes it. Closing twice is harmless.

    ``kept_dir``: the overlay is written there instead, as ``<pid>-<random>.json``, and stays after the
    run, because Claude's resume hint names it (``claude --settings <it> --resume <id>``). On close it
    is rewritten to the user's own settings alone: a Claude started from it later runs none of happy's
    hooks. (If happy dies without closing, each of those hooks exits 0 at once: its files are gone.)
    """

    EVENTS_NAME = "hook-events.jsonl"
    SETTINGS_NAME = "settings.json"
    PERMISSION_HOOK_NAME = "permission-hook.py"

    def __init__(self, runtime_dir: Path, *, kept_dir: Path | None = None) -> None:
        runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdtemp creates the directory 0700 atomically with a unique name: no race with another launcher.
        self.dir = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=runtime_dir))
        self._kept_dir = kept_dir
        self._detached: tuple[Path, bytes] | None = None  # the kept overlay, and what it becomes on close
        self._closed = False
        try:
            self.events_path = self.dir / self.EVENTS_NAME
            write_private(self.events_path, b"")
            self.command = hook_command(self.events_path)
        except BaseException:
            self.close()
            raise

    def write_settings(
        self,
        user_settings: str | None,
        *,
        cwd: Path,
        enable_all_hooks: bool = False,
        control_socket: Path | None = None,
    ) -> Path:
        """Build the overlay (see :func:`build_settings_overlay`), write it to a 0600 file in the channel
        and return its path, the value for Claude's one ``--settings`` (a file: no huge inline argument
        in ``ps``, no quoting issues). ``control_socket``: add the PermissionRequest hook asking it; the
        hook's script is copied into the channel, so that upgrading happy mid-run cannot take it away
        (Python would exit 2, which Claude takes as a deny)."""
        permission = None
        if control_socket is not None:
            script = self.dir / self.PERMISSION_HOOK_NAME
            write_private(script, _PERMISSION_HOOK.read_bytes())
            permission = permission_hook_command(script, control_socket)
        text = build_settings_overlay(
            user_settings,
            self.command,
            cwd=cwd,
            enable_all_hooks=enable_all_hooks,
            permission_command=permission,
        )
        if self._kept_dir is None:
            path = self.dir / self.SETTINGS_NAME
        else:
            self._kept_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            path = self._kept_dir / f"{self.dir.name}.json"
            users = build_settings_overlay(user_settings, None, cwd=cwd)
            self._detached = (path, users.encode())
        write_private(path, text.encode())
        return path

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._detached is not None:
            with contextlib.suppress(OSError):  # a full disk: the hooks left in it do nothing
                write_private(*self._detached)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _load_user_settings(user_settings: str, cwd: Path) -> tuple[dict[str, Any], str]:
    """The user's ``--settings`` value as a dict, and where it came from (for messages): inline JSON
    (starts with ``{``, Claude's own rule) or a path relative to ``cwd``."""
    import orjson  # its checks (no NaN, no 64-bit overflow), only when --settings is given

    if user_settings.lstrip().startswith("{"):
        source, raw = "--settings JSON", user_settings.encode()
    else:
        path = cwd / Path(user_settings).expanduser()
        source = f"--settings file {path}"
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise InputFileError(
                f"{source} can't be read ({e.strerror}): fix the path or drop --settings"
            ) from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise UsageError(f"{source} is not valid JSON ({e}): fix it or drop --settings") from None
    if not isinstance(data, dict):
        raise UsageError(f"{source} must be a JSON object, not {type(data).__name__}")
    return data, source


def _merged_hooks(user: dict[str, Any], ours: Mapping[str, list[Any]], source: str) -> dict[str, Any]:
    user_hooks = user.get("hooks", {})
    if not isinstance(user_hooks, dict):
        raise UsageError(f'{source}: "hooks" must be an object of event name -> list of matchers')
    merged = dict(user_hooks)
    for event, entries in ours.items():
        existing = merged.get(event, [])
        if not isinstance(existing, list):
            raise UsageError(f'{source}: "hooks.{event}" must be a list of matchers')
        merged[event] = [*existing, *entries]  # the user's hooks keep running, ours come last
    return merged


def build_settings_overlay(
    user_settings: str | None,
    hook_command: str | None,
    *,
    cwd: Path,
    enable_all_hooks: bool = False,
    permission_command: str | None = None,
) -> str:
    """The JSON text of the ONE ``--settings`` to pass: the user's settings plus our SessionStart hook
    (and our PermissionRequest hook, ``permission_command``, when given); ``hook_command`` None: the
    user's settings alone.

    ``user_settings`` is the user's own ``--settings`` value (inline JSON or a path, relative to ``cwd``);
    unreadable or invalid → :class:`UsageError`, never silently dropped. ``enable_all_hooks`` forces
    ``"disableAllHooks": false`` (see the module docstring for why that is not the default).
    """
    settings: dict[str, Any] = {}
    source = "--settings"
    if user_settings is not None:
        settings, source = _load_user_settings(user_settings, cwd)
    if hook_command is None:
        return json.dumps(settings, ensure_ascii=False, separators=(",", ":"))
    entry = [{"hooks": [{"type": "command", "command": hook_command, "timeout": HOOK_TIMEOUT_S}]}]
    ours = {"SessionStart": entry, **prompt_hooks(entry)}
    if permission_command is not None:
        hook = {"type": "command", "command": permission_command, "timeout": PERMISSION_HOOK_TIMEOUT_S}
        ours["PermissionRequest"] = [{"hooks": [hook]}]
    settings["hooks"] = _merged_hooks(settings, ours, source)
    if enable_all_hooks:
        settings["disableAllHooks"] = False
    # The stdlib's serialiser: this runs before Claude starts, and importing orjson costs ~10 ms.
    return json.dumps(settings, ensure_ascii=False, separators=(",", ":"))


def prompt_hooks(entry: list[Any]) -> dict[str, list[Any]]:
    """Inject mode (local/injector.py) is confirmed by UserPromptSubmit, whose payload has the
    exact prompt: the same append as SessionStart (~3 ms per prompt; its stdout, empty, would be
    added to the prompt's context)."""
    return {"UserPromptSubmit": entry}


class HookEvent(NamedTuple):
    """One hook payload. Every payload has ``session_id``, ``transcript_path``, ``cwd`` and
    ``hook_event_name``; SessionStart adds ``source`` (startup/resume/clear/compact/fork).
    (Not a dataclass: this module is loaded before Claude starts.)"""

    hook_event_name: str
    session_id: str
    transcript_path: Path | None = None
    source: str | None = None
    cwd: str | None = None
    prompt: str | None = None  # UserPromptSubmit: the prompt as submitted


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def parse_hook_line(line: bytes) -> HookEvent | None:
    """Parse one line of the events file; blank, partial or malformed lines give None (never raise)."""
    line = line.strip()
    if not line:
        return None
    import orjson  # not loaded before Claude starts (see build_settings_overlay)

    with contextlib.suppress(orjson.JSONDecodeError):
        data = orjson.loads(line)
        if not isinstance(data, dict):
            return None
        name, session_id = _opt_str(data, "hook_event_name"), _opt_str(data, "session_id")
        if name is None or session_id is None:
            return None
        transcript = _opt_str(data, "transcript_path")
        return HookEvent(
            hook_event_name=name,
            session_id=session_id,
            transcript_path=Path(transcript) if transcript else None,
            source=_opt_str(data, "source"),
            cwd=_opt_str(data, "cwd"),
            prompt=data.get("prompt") if isinstance(data.get("prompt"), str) else None,
        )
    return None
