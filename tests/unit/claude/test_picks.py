"""The session Claude would pick for `--continue` and `--resume <title>`, named before the spawn
(claude/picks.py; the real Claude agreeing is in tests/e2e/test_resume_e2e.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from happy_launcher.claude.args import SessionIntent
from happy_launcher.claude.picks import latest_session, resolve_pick, session_titled

A = "aaaaaaaa-2222-4333-8444-555555555555"
B = "bbbbbbbb-2222-4333-8444-555555555555"
C = "cccccccc-2222-4333-8444-555555555555"


def transcript(project: Path, session_id: str, *records: dict[str, object], mtime: float = 1e9) -> Path:
    project.mkdir(parents=True, exist_ok=True)
    path = project / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ({"type": "user"}, *records)))
    os.utime(path, (mtime, mtime))
    return path


def custom(title: str) -> dict[str, object]:
    return {"type": "custom-title", "customTitle": title}


def test_continue_takes_the_most_recently_written_transcript(tmp_path: Path) -> None:
    transcript(tmp_path, A, mtime=3e9)
    transcript(tmp_path, B, mtime=2e9)
    (tmp_path / "notes.jsonl").write_text("{}\n")  # not a session's transcript
    (tmp_path / A).mkdir()  # its subagents
    assert latest_session(tmp_path) == A
    assert resolve_pick(SessionIntent("continue", fork=True), tmp_path) == SessionIntent(
        "resume", resume_id=A, fork=True
    )


def test_nothing_to_continue_is_left_to_claude(tmp_path: Path) -> None:
    assert latest_session(tmp_path / "missing") is None
    assert resolve_pick(SessionIntent("continue"), tmp_path / "missing") == SessionIntent("continue")


def test_a_title_names_the_one_session_that_has_it(tmp_path: Path) -> None:
    transcript(tmp_path, A, custom("old name"), custom("  My Work "))  # the last rename counts
    transcript(tmp_path, B, custom("other"), {"type": "ai-title", "aiTitle": "my work"})  # custom wins
    transcript(tmp_path, C, {"type": "ai-title", "aiTitle": "Fixing the parser"})
    assert session_titled(tmp_path, "my work") == A
    assert session_titled(tmp_path, "fixing the parser ") == C
    assert session_titled(tmp_path, "old name") is None
    assert resolve_pick(SessionIntent("resume", resume_id="MY WORK"), tmp_path).resume_id == A


def test_an_ambiguous_or_unknown_title_is_left_to_claude(tmp_path: Path) -> None:
    transcript(tmp_path, A, custom("twin"))
    transcript(tmp_path, B, custom("twin"))
    path = transcript(tmp_path, C)
    with path.open("a") as f:
        f.write('[1]\n{"type": "custom-title", "customTitle": 7}\n{not json "custom-title"\n')
    for value in ("twin", "nothing like it", None, A):
        intent = SessionIntent("resume", resume_id=value)
        assert resolve_pick(intent, tmp_path) == intent


def test_only_the_end_of_a_transcript_is_read_for_its_title(tmp_path: Path) -> None:
    long_ago = custom("buried")
    transcript(tmp_path, A, long_ago, {"type": "user", "text": "x" * (128 << 10)})
    assert session_titled(tmp_path, "buried") is None
