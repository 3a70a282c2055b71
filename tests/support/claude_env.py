"""Run the real (bundled) Claude Code CLI hermetically against the fake Messages API.

See /work/shared/docs/claude-offline.md §1 for the environment and the config the interactive TUI needs.

    env = make_claude_env(tmp_path, fake.url)
    subprocess.run([str(env.binary), "-p", "hi"], cwd=env.cwd, env=env.env, ...)
    env.transcript_path(session_id)
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_API_KEY",
    "ClaudeEnv",
    "claude_version",
    "find_claude_binary",
    "make_claude_env",
    "project_slug",
]

DEFAULT_API_KEY = "sk-test-happy-launcher-fake-key-0000000000"

# Variables that keep the CLI from talking to anything but ANTHROPIC_BASE_URL (claude-offline.md §1).
OFFLINE_VARS: dict[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_GROWTHBOOK": "1",
    "DISABLE_FEEDBACK_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    "IS_SANDBOX": "1",
}

# Inherited from the caller's environment (everything else is dropped: no stray ANTHROPIC_* or CLAUDE_*).
# PYTHONPATH: a `happy` the tests start runs the sources the tests import (a worktree's, say).
_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONPATH")


def find_claude_binary() -> Path:
    """The Claude Code binary the tests run: ``HAPPY_CLAUDE_PATH`` when set (scripts/drift points it
    at another version), else the one bundled in the ``claude-agent-sdk`` wheel."""
    override = os.environ.get("HAPPY_CLAUDE_PATH")
    if override:
        return Path(override)
    import claude_agent_sdk

    path = Path(claude_agent_sdk.__file__).resolve().parent / "_bundled" / "claude"
    if not path.is_file():
        raise FileNotFoundError(f"no bundled Claude binary at {path}")
    return path


def claude_version(binary: Path | None = None) -> str:
    """The bundled version, e.g. ``2.1.329`` (from ``_bundled/claude.version``, else ``--version``)."""
    binary = binary or find_claude_binary()
    version_file = binary.with_name("claude.version")
    if version_file.is_file():
        text = version_file.read_text().strip()
        if text:
            return text.split()[0]
    import subprocess

    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip().split()[0]


def _java_hash(s: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if n == 0:
        return "0"
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(digits[r])
    return "".join(reversed(out))


def project_slug(cwd: str | os.PathLike[str]) -> str:
    """The projects/ folder name of a cwd: every UTF-16 code unit outside [A-Za-z0-9] becomes ``-``;
    longer than 200: the first 200 chars + ``-`` + base36(abs(java hash of the cwd))."""
    s = os.fspath(cwd)
    data = s.encode("utf-16-le")
    units = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    slug = "".join(chr(u) if u < 128 and chr(u).isalnum() else "-" for u in units)
    if len(slug) <= 200:
        return slug
    return f"{slug[:200]}-{_base36(abs(_java_hash(s)))}"


@dataclass(frozen=True)
class ClaudeEnv:
    """A hermetic home for one CLI run. ``env`` is the full environment to pass (not a delta)."""

    root: Path  # the tmp dir everything lives in
    home: Path  # HOME
    config_dir: Path  # ~/.claude (or CLAUDE_CONFIG_DIR)
    cwd: Path  # the project folder the CLI runs in (resolved)
    tmp_dir: Path  # CLAUDE_CODE_TMPDIR and XDG_RUNTIME_DIR
    binary: Path
    base_url: str
    api_key: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def claude_json(self) -> Path:
        """The global config file (``~/.claude.json``, or inside CLAUDE_CONFIG_DIR)."""
        if "CLAUDE_CONFIG_DIR" in self.env:
            return self.config_dir / ".claude.json"
        return self.home / ".claude.json"

    @property
    def settings_path(self) -> Path:
        return self.config_dir / "settings.json"

    @property
    def projects_dir(self) -> Path:
        """``<config>/projects``: one folder per project slug."""
        return self.config_dir / "projects"

    @property
    def project_dir(self) -> Path:
        """``<config>/projects/<slug of cwd>``: where this cwd's transcripts go."""
        return self.projects_dir / project_slug(self.cwd)

    def transcript_path(self, session_id: str) -> Path:
        return self.project_dir / f"{session_id}.jsonl"

    def subagents_dir(self, session_id: str) -> Path:
        return self.project_dir / session_id / "subagents"

    def command(self, *args: str) -> list[str]:
        return [str(self.binary), *args]

    def with_env(self, **changes: str | None) -> ClaudeEnv:
        """A copy with variables set (or removed when None)."""
        env = dict(self.env)
        for k, v in changes.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return ClaudeEnv(
            root=self.root,
            home=self.home,
            config_dir=self.config_dir,
            cwd=self.cwd,
            tmp_dir=self.tmp_dir,
            binary=self.binary,
            base_url=self.base_url,
            api_key=self.api_key,
            env=env,
        )


def make_claude_env(
    root: Path,
    base_url: str,
    *,
    api_key: str = DEFAULT_API_KEY,
    use_config_dir: bool = False,
    permission_mode: str = "acceptEdits",
    allow: tuple[str, ...] = ("Bash(echo:*)",),
    background_tasks: bool = True,
    max_retries: int | None = None,
    settings: Mapping[str, Any] | None = None,
    extra_env: Mapping[str, str] | None = None,
    binary: Path | None = None,
    term: str = "xterm-256color",
) -> ClaudeEnv:
    """Create ``root/{home,project,tmp}``, seed the TUI config and return the environment.

    - ``use_config_dir``: set CLAUDE_CONFIG_DIR=root/home/.claude instead of relying on HOME alone
      (HOME is set to root/home either way).
    - ``permission_mode``: ``permissions.defaultMode`` (never ``auto``: its classifier is server-side).
    - ``allow``: ``permissions.allow`` rules.
    - ``background_tasks=False`` sets CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1 (foreground subagents).
    - ``settings``: merged (shallowly) into the seeded settings.json.
    """
    root = root.resolve()
    home = root / "home"
    config_dir = home / ".claude"
    cwd = root / "project"
    tmp_dir = root / "tmp"
    for d in (home, config_dir, cwd, tmp_dir):
        d.mkdir(parents=True, exist_ok=True)
    tmp_dir.chmod(0o700)
    cwd = cwd.resolve()

    env: dict[str, str] = {k: os.environ[k] for k in _PASSTHROUGH if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        {
            "HOME": str(home),
            "USER": os.environ.get("USER", "tester"),
            "SHELL": shutil.which("bash") or "/bin/sh",
            "TERM": term,
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": api_key,
            "CLAUDE_CODE_TMPDIR": str(tmp_dir),
            "XDG_RUNTIME_DIR": str(tmp_dir),
            "TMPDIR": str(tmp_dir),
            **OFFLINE_VARS,
        }
    )
    if use_config_dir:
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    if not background_tasks:
        env["CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"] = "1"
    if max_retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(max_retries)
    env.update(extra_env or {})

    cenv = ClaudeEnv(
        root=root,
        home=home,
        config_dir=config_dir,
        cwd=cwd,
        tmp_dir=tmp_dir,
        binary=binary or find_claude_binary(),
        base_url=base_url,
        api_key=api_key,
        env=env,
    )
    claude_json = {
        "hasCompletedOnboarding": True,
        "hasSeenAutoDefaultNotice": True,
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {
            str(cwd): {
                "allowedTools": [],
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
            }
        },
    }
    cenv.claude_json.write_text(json.dumps(claude_json, indent=2))
    seeded: dict[str, Any] = {
        "permissions": {
            "defaultMode": permission_mode,
            "disableAutoMode": "disable",
            "allow": list(allow),
        },
        "skipDangerousModePermissionPrompt": True,
    }
    seeded.update(settings or {})
    cenv.settings_path.write_text(json.dumps(seeded, indent=2))
    return cenv
