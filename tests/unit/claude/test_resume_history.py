"""A resumed session's history: fixed before the launch, indexed in bounded passes, never
confused with what Claude writes after the launch (issue 7)."""

from __future__ import annotations

from pathlib import Path

from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.claude.session_files import SessionFiles
from tests.support.transcripts import assistant, user, write_jsonl, write_subagent

BUDGET = 1 << 16


def history(path: Path, count: int, prefix: str = "old") -> None:
    """`count` records of ~1 KB each."""
    write_jsonl(path, [user(f"{prefix}-{n}", f"prompt {n} " + "x" * 1000) for n in range(count)])


def drain(files: SessionFiles, max_bytes: int | None = BUDGET) -> list[str | None]:
    got: list[str | None] = []
    while True:
        got += [r.uuid for r in files.read_new(max_bytes=max_bytes)]
        if not files.behind:
            return got


def test_records_written_after_the_snapshot_are_new_however_late_reading_starts(tmp_path: Path) -> None:
    main = tmp_path / "proj" / "s1.jsonl"
    history(main, 300)
    sub = write_subagent(main, "x", "toolu_X", [assistant("s-old", isSidechain=True)])
    existing = ExistingFiles.of_sessions([main])  # before the spawn
    # Claude appends as soon as it starts, long before the mirror reads anything.
    write_jsonl(main, [user("new-1", "hello"), assistant("new-2")], append=True)
    write_jsonl(sub, [assistant("s-new", isSidechain=True)], append=True)
    files = SessionFiles()
    files.add_main(main, known=existing.sizes)
    assert drain(files) == ["new-1", "new-2", "s-new"]
    assert files.stats.records == 304


def test_a_line_unfinished_at_the_snapshot_counts_as_new(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    write_jsonl(main, [user("old", "a")])
    with main.open("ab") as f:
        f.write(b'{"type":"user","uuid":"half",')
    known = {main: main.stat().st_size}
    with main.open("ab") as f:
        f.write(b'"message":{"content":"b"}}\n')
    files = SessionFiles()
    files.add_main(main, known=known)
    assert drain(files) == ["half"]


def test_history_is_indexed_in_bounded_passes_while_claude_appends(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    history(main, 1000)  # ~1 MB: about 16 passes of 64 KB
    files = SessionFiles()
    files.add_main(main, known=ExistingFiles.of_sessions([main]).sizes)
    got: list[str | None] = []
    passes = 0
    while True:
        got += [r.uuid for r in files.read_new(max_bytes=BUDGET)]
        passes += 1
        write_jsonl(main, [user(f"new-{passes}", "during indexing")], append=True)
        if not files.behind:
            break
    got += drain(files)
    assert passes >= 10  # indexing did not happen in one go
    assert got == [f"new-{n}" for n in range(1, passes + 1)]


def test_each_pass_reads_about_its_budget(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    history(main, 2000)
    files = SessionFiles()
    files.add_main(main)  # --happy-replay-existing: all of it is sent
    sent, passes = 0, 0
    while True:
        batch = list(files.read_new(max_bytes=BUDGET))
        assert sum(r.size for r in batch) <= BUDGET + 2048  # + the line that straddles the budget
        sent += len(batch)
        passes += 1
        if not files.behind:
            break
    assert sent == 2000
    assert passes > 2_000_000 // BUDGET


def test_a_fork_is_read_only_after_its_original_is_indexed(tmp_path: Path) -> None:
    """The fork's file starts with a copy of the original's records: they must be known first."""
    original, fork = tmp_path / "s1.jsonl", tmp_path / "s2.jsonl"
    history(original, 500)
    existing = ExistingFiles.of_sessions([original, fork])
    history(fork, 500)  # the copy Claude writes into the new file
    write_jsonl(fork, [user("forked-new", "next")], append=True)
    files = SessionFiles()
    files.add_main(original, known=existing.sizes)
    files.add_main(fork, known=existing.sizes)
    assert drain(files) == ["forked-new"]
    assert files.stats.duplicates == 500


def test_project_snapshot_covers_every_session_and_absent_files(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    history(project / "a.jsonl", 2)
    sub = write_subagent(project / "a.jsonl", "x", None, [assistant("s", isSidechain=True)])
    existing = ExistingFiles.of_project(project)
    assert existing.sizes == {
        project / "a.jsonl": (project / "a.jsonl").stat().st_size,
        sub: sub.stat().st_size,
    }
    assert existing.covers(project / "a.jsonl")
    assert existing.covers(project / "new.jsonl")  # absent before the launch: all of it is new
    assert not existing.covers(tmp_path / "other" / "a.jsonl")
    assert ExistingFiles.of_project(tmp_path / "none").sizes == {}


def test_the_picked_session_is_the_transcript_that_grows(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    history(project / "a.jsonl", 2)
    history(project / "b.jsonl", 2)
    existing = ExistingFiles.of_project(project)
    assert existing.grown() is None  # nothing written since the snapshot
    with (project / "b.jsonl").open("ab") as f:
        f.write(b'{"type":"user"}\n')
    assert existing.grown() == project / "b.jsonl"
    assert ExistingFiles.of_sessions([project / "a.jsonl"]).grown() is None  # not a project snapshot
    fresh = ExistingFiles.of_project(tmp_path / "empty")
    history(tmp_path / "empty" / "c.jsonl", 1)  # a project that did not exist then
    assert fresh.grown() == tmp_path / "empty" / "c.jsonl"
