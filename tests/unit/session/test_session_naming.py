"""A session's one-line title (session/naming.py): Claude's own title from its transcript (read on
from where the last read stopped), else the first prompt; and the store's part of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from happy_launcher.session.naming import TranscriptTitles, one_line, session_title
from happy_launcher.store.sessions import SessionStore
from tests.support.control import stored_session


def write(path: Path, *records: dict[str, Any], partial: bytes = b"") -> None:
    with path.open("ab") as out:
        out.write(b"".join(orjson.dumps(r) + b"\n" for r in records) + partial)


def user(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}, "uuid": "u"}


def test_one_line_takes_the_first_line_cut_to_length_and_says_when_it_left_something_out() -> None:
    assert one_line("Fix the build") == "Fix the build"
    assert one_line("\n  \n  Fix  the\tbuild  \nthen the tests\n") == "Fix the build …"
    long = one_line("word " * 40)
    assert long is not None and len(long) == 80 and long.endswith("…")
    assert one_line(" \n\t\n") is None


def test_claude_s_own_title_wins_a_given_name_first_and_the_last_of_each_kind_stands(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    titles = TranscriptTitles()
    write(path, user("the prompt"))
    assert titles.title(str(path)) is None
    assert session_title("the prompt\nmore", str(path), titles) == "the prompt …"
    write(path, {"type": "summary", "summary": "An old summary", "leafUuid": "u"})
    assert titles.title(str(path)) == "An old summary"
    # A prompt that merely quotes a title record is not one (in the file it is escaped text).
    write(
        path,
        user('{"type":"ai-title","aiTitle":"quoted"}'),
        {"type": "ai-title", "aiTitle": "Made by Claude"},
    )
    assert titles.title(str(path)) == "Made by Claude"
    write(path, {"type": "custom-title", "customTitle": "Given\nby the user", "sessionId": "s"})
    write(path, {"type": "ai-title", "aiTitle": "A later one of Claude's"})
    assert session_title("the prompt", str(path), titles) == "Given …"
    write(path, {"type": "custom-title", "customTitle": ""})  # the name cleared
    assert titles.title(str(path)) == "A later one of Claude's"


def test_a_transcript_is_read_on_from_where_the_last_read_stopped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    titles = TranscriptTitles()
    half = orjson.dumps({"type": "custom-title", "customTitle": "Whole"})
    write(path, user("x" * 3_000_000), partial=half[:10])  # a line still being written
    assert titles.title(str(path)) is None
    write(path, partial=half[10:] + b"\n")
    assert titles.title(str(path)) == "Whole"
    size = path.stat().st_size
    os.truncate(path, 0)  # the file cut short (or replaced): read again from its start
    write(path, {"type": "ai-title", "aiTitle": "Again"})
    assert path.stat().st_size < size and titles.title(str(path)) == "Again"
    assert titles.title(str(tmp_path / "gone.jsonl")) is None
    assert session_title("the prompt", str(tmp_path / "gone.jsonl"), titles) == "the prompt"


def test_the_store_gives_each_session_its_first_prompt_and_current_transcript(tmp_path: Path) -> None:
    stored_session(tmp_path, "hs-a", prompt="first\nsecond line", at=5_000, transcript=tmp_path / "a.jsonl")
    stored_session(tmp_path, "hs-b", prompt=None, at=6_000)
    store = SessionStore.open(tmp_path)
    try:
        store.record_claude_session("hs-a", "claude-2", source="resume", seen_at=7_000, transcript_path=None)
        store.record_claude_session("hs-a", "claude-3", source="resume", seen_at=8_000, transcript_path="/c3")
        by_id = {s.info.id: s for s in store.session_summaries()}
    finally:
        store.close()
    assert (by_id["hs-a"].first_prompt, by_id["hs-a"].transcript) == ("first\nsecond line", "/c3")
    assert (by_id["hs-b"].first_prompt, by_id["hs-b"].transcript) == (None, None)
