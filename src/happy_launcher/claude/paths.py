"""Where Claude keeps a session's transcript (claude-offline.md §3): the fallback when the
SessionStart hook has not told us yet."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

_MAX_SLUG = 200
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def claude_config_dir(env: Mapping[str, str]) -> Path:
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured)
    return Path(env.get("HOME") or Path.home()) / ".claude"


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", errors="surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _java_hash(text: str) -> int:
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def project_slug(cwd: str) -> str:
    """Every UTF-16 code unit outside [A-Za-z0-9] becomes '-'; long slugs get a hash suffix."""
    slug = "".join("-" if unit > 0x7F else ch for unit, ch in _pairs(cwd))
    slug = _NOT_ALNUM.sub("-", slug)
    if len(slug) <= _MAX_SLUG:
        return slug
    return f"{slug[:_MAX_SLUG]}-{_base36(abs(_java_hash(cwd)))}"


def _pairs(text: str) -> list[tuple[int, str]]:
    # A character outside the BMP is two UTF-16 units: two dashes, like Claude's JavaScript.
    out: list[tuple[int, str]] = []
    for ch in text:
        if ord(ch) > 0xFFFF:
            out += [(0xD800, "-"), (0xDC00, "-")]
        else:
            out.append((ord(ch), ch))
    return out


def project_dir(env: Mapping[str, str], cwd: Path) -> Path:
    return claude_config_dir(env) / "projects" / project_slug(str(cwd))


def transcript_path(env: Mapping[str, str], cwd: Path, session_id: str) -> Path:
    return project_dir(env, cwd) / f"{session_id}.jsonl"
