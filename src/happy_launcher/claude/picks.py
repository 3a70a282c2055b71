"""The session Claude would pick for `--continue` or `--resume <title>`, found before the spawn, so
that a run knows its Claude session (and so its happy session) before Claude writes anything
(issue 16 §1). The run then resumes that id: what happy bound and what Claude appends to are the
same session by construction.

Claude 2.1.329's rules, as measured: `--continue` takes the project's most recently modified
transcript; `--resume <title>` takes the one session whose custom title (else its AI title),
lower-cased and trimmed, equals the value, read from the end of each transcript, where Claude
re-writes its metadata. Anything else (no transcript, no match, several) is left to Claude.
Light: it runs before Claude starts.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

from happy_launcher.claude.args import SessionIntent, is_uuid
from happy_launcher.claude.titles import session_title_record

_JSONL = ".jsonl"
_TAIL = 64 << 10  # Claude keeps its title records in a transcript's last 32 KiB
_TITLE_KINDS = (b'"custom-title"', b'"ai-title"')


def resolve_pick(intent: SessionIntent, project: Path) -> SessionIntent:
    """`intent` with the session Claude would pick named by id (as `--resume <uuid>`), when
    happy can tell which; otherwise `intent` as it was."""
    if intent.kind == "continue":
        picked = latest_session(project)
    elif intent.kind == "resume" and intent.resume_id is not None and not is_uuid(intent.resume_id):
        picked = session_titled(project, intent.resume_id)
    else:
        return intent
    return intent if picked is None else intent._replace(kind="resume", resume_id=picked)


def _transcripts(project: Path) -> list[tuple[float, str, Path]]:
    """(mtime, session id, path) of the project's main transcripts."""
    found: list[tuple[float, str, Path]] = []
    with suppress(OSError), os.scandir(project) as entries:
        for entry in entries:
            session_id = entry.name.removesuffix(_JSONL)
            if entry.name.endswith(_JSONL) and is_uuid(session_id):
                with suppress(OSError):
                    found.append((entry.stat().st_mtime, session_id, Path(entry.path)))
    return found


def latest_session(project: Path) -> str | None:
    """The session `--continue` takes: the most recently written transcript."""
    found = _transcripts(project)
    return max(found)[1] if found else None


def session_titled(project: Path, title: str) -> str | None:
    """The one session whose title is `title` (compared as Claude does), if exactly one is."""
    wanted = title.lower().strip()
    matches = [sid for _, sid, path in _transcripts(project) if _title(path) == wanted]
    return matches[0] if len(matches) == 1 else None


def _title(path: Path) -> str | None:
    """The session's custom title, else its AI title (the last of each), lower-cased and trimmed."""
    titles: dict[str, str] = {}
    with suppress(OSError), path.open("rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - _TAIL))
        for line in f.read().splitlines():
            if any(kind in line for kind in _TITLE_KINDS) and (found := session_title_record(line)):
                titles[found[0]] = found[1]
    title = titles.get("custom-title") or titles.get("ai-title")
    return title.lower().strip() if title else None
