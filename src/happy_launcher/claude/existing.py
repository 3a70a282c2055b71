"""What was on disk before Claude was launched: the sizes of the transcripts it may append to.

A resumed session appends to its old files, and Claude may write within milliseconds of its
start, long before the mirror has read (let alone indexed) a large history. So what counts as
history is fixed before the spawn, with a few `stat`s: everything after those sizes is new
(issue 7). Light on purpose: it runs before Claude starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

_JSONL = ".jsonl"


class ExistingFiles(NamedTuple):
    """Sizes of transcript files (main and subagent) taken before the launch.

    `covered`: main transcripts whose session this snapshot describes fully, existing or not (a
    main file it covers that was absent then is wholly new). `project`: a directory all of whose
    sessions are covered (when Claude picks the session: bare `--resume` / `--continue`).
    """

    sizes: Mapping[Path, int]
    covered: frozenset[Path] = frozenset()
    project: Path | None = None

    @classmethod
    def before_launch(cls, project: Path, sessions: Iterable[str] | None) -> ExistingFiles:
        """Taken just before the spawn: these sessions of the project directory, or all of
        them when Claude picks the session (`sessions` None)."""
        if sessions is None:
            return cls.of_project(project)
        return cls.of_sessions(project / f"{session_id}{_JSONL}" for session_id in sessions)

    @classmethod
    def of_sessions(cls, mains: Iterable[Path]) -> ExistingFiles:
        """These main transcripts and their subagent files, as they are now."""
        sizes: dict[Path, int] = {}
        covered = frozenset(path.absolute() for path in mains)
        for main in covered:
            _add_size(sizes, main)
            _add_subagents(sizes, main.with_suffix(""))
        return cls(sizes, covered)

    @classmethod
    def of_project(cls, project: Path) -> ExistingFiles:
        """Every session of a Claude project directory, as it is now."""
        project = project.absolute()
        sizes: dict[Path, int] = {}
        try:
            with os.scandir(project) as entries:
                for entry in entries:
                    if entry.name.endswith(_JSONL):
                        _add_size(sizes, Path(entry.path))
                    elif entry.is_dir(follow_symlinks=False):
                        _add_subagents(sizes, Path(entry.path))
        except OSError:
            pass  # no project directory yet: nothing existed
        return cls(sizes, project=project)

    def covers(self, main: Path) -> bool:
        main = main.absolute()
        return main in self.covered or main.parent == self.project

    def grown(self) -> Path | None:
        """The project's main transcript that has grown (or appeared) since the snapshot, the most
        recently written first: the session Claude picked for `--continue` or `--resume <title>`
        when no hook tells (headless runs). None while Claude has written nothing."""
        if self.project is None:
            return None
        grown: list[tuple[float, Path]] = []
        with suppress(OSError), os.scandir(self.project) as entries:
            for entry in entries:
                if not entry.name.endswith(_JSONL):
                    continue
                with suppress(OSError):
                    st = entry.stat()
                    path = Path(entry.path)
                    if st.st_size > self.sizes.get(path, 0):
                        grown.append((st.st_mtime, path))
        return max(grown)[1] if grown else None


def _add_size(sizes: dict[Path, int], path: Path) -> None:
    # Absent (or unreadable, which the reader reports): nothing of it is history.
    with suppress(OSError):
        sizes[path] = path.stat().st_size


def _add_subagents(sizes: dict[Path, int], session_dir: Path) -> None:
    try:
        with os.scandir(session_dir / "subagents") as entries:
            for entry in entries:
                if entry.name.endswith(_JSONL):
                    _add_size(sizes, Path(entry.path))
    except OSError:
        pass  # no subagents
