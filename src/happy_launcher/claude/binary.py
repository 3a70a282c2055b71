"""Find the Claude Code binary both launchers run (design.md §6).

Order: ``HAPPY_CLAUDE_PATH``, else ``claude`` on ``PATH``, else the binary bundled in the ``claude-agent-sdk``
wheel. The environment comes in as a parameter so callers (and tests) control it completely.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from happy_launcher.errors import ClaudeNotFoundError

__all__ = ["ENV_VAR", "INSTALL_HINT", "bundled_claude", "find_claude"]

ENV_VAR = "HAPPY_CLAUDE_PATH"

INSTALL_HINT = (
    "install one with `pip install claude-agent-sdk` (bundles it) or "
    f"`npm install -g @anthropic-ai/claude-code`, or set {ENV_VAR} to a Claude Code executable"
)


def _is_executable_file(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def bundled_claude() -> Path | None:
    """The ``claude`` binary inside the installed ``claude-agent-sdk`` package, if there is one.

    ``find_spec`` locates the package without importing it: importing ``claude_agent_sdk`` pulls in the
    whole SDK (hundreds of ms), far too slow for a lookup done on every start.
    """
    import importlib.util  # the last resort: not loaded before Claude's spawn otherwise

    try:
        spec = importlib.util.find_spec("claude_agent_sdk")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "_bundled" / "claude"
        if _is_executable_file(candidate):
            return candidate
    return None


def _from_env_var(value: str) -> Path:
    path = Path(value).expanduser()
    if not path.exists():
        raise ClaudeNotFoundError(
            f"{ENV_VAR}={value} does not exist: point it at a Claude Code executable or unset it"
        )
    if not _is_executable_file(path):
        raise ClaudeNotFoundError(
            f"{ENV_VAR}={value} is not an executable file: point it at a Claude Code executable or unset it"
        )
    return path


def find_claude(env: Mapping[str, str], *, bundled: Callable[[], Path | None] = bundled_claude) -> Path:
    """The Claude Code binary to run, or :class:`ClaudeNotFoundError` saying how to install one.

    ``env`` is the environment Claude will run with (``HAPPY_CLAUDE_PATH`` and ``PATH`` are read from it,
    never from ``os.environ``). ``bundled`` is the last-resort lookup (replaceable in tests).
    """
    override = env.get(ENV_VAR, "")
    # An empty value counts as unset, the usual shell idiom for switching an override off.
    if override:
        return _from_env_var(override)
    import shutil  # (~3 ms, before Claude's spawn: only when needed)

    # An empty PATH means "no directories": which() then finds nothing instead of falling back to os.environ.
    on_path = shutil.which("claude", path=env.get("PATH", ""))
    if on_path is not None:
        return Path(on_path)
    found = bundled()
    if found is not None:
        return found
    raise ClaudeNotFoundError(f"Claude Code not found ({ENV_VAR} unset, no `claude` on PATH): {INSTALL_HINT}")
