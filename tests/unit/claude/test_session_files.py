"""SessionFiles: main + subagent files, tags from .meta.json, dedupe, drain-before-stop."""

from __future__ import annotations

from pathlib import Path

import pytest

from happy_launcher.claude.session_files import HOLD_MAX, SessionFiles
from tests.support.transcripts import assistant, subagent_paths, user, write_jsonl, write_subagent


def uuids(files: SessionFiles) -> list[str | None]:
    return [r.uuid for r in files.read_new()]


def test_subagent_records_are_tagged_and_drained_before_the_stopping_result(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    write_jsonl(
        main,
        [
            user("u1", "go"),
            assistant("a1", {"type": "tool_use", "id": "toolu_A", "name": "Agent", "input": {"prompt": "p"}}),
            user(
                "r1",
                [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "done"}],
                toolUseResult={"status": "completed", "agentId": "abc"},
            ),
        ],
    )
    write_subagent(
        main, "abc", "toolu_A", [user("s1", "p", isSidechain=True), assistant("s2", isSidechain=True)]
    )
    files = SessionFiles()
    files.add_main(main)
    records = list(files.read_new())
    assert [r.uuid for r in records] == ["u1", "a1", "s1", "s2", "r1"]
    assert [r.parent_tool_use_id for r in records] == [None, None, "toolu_A", "toolu_A", None]


def test_background_subagent_drained_at_its_notification(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    note = "<task-notification><task-id>bg1</task-id><status>completed</status></task-notification>"
    write_jsonl(
        main,
        [
            user("u1", "go"),
            user("n1", note, origin={"kind": "task-notification"}),
            assistant("a2"),
        ],
    )
    write_subagent(main, "bg1", None, [user("s1", "p", isSidechain=True)])
    files = SessionFiles()
    files.add_main(main)
    records = list(files.read_new())
    assert [r.uuid for r in records] == ["u1", "s1", "n1", "a2"]
    assert records[1].parent_tool_use_id is None  # no meta.json: left to the mapper's inference


def test_dedupe_across_files_and_incremental_reads(tmp_path: Path) -> None:
    first, second = tmp_path / "s1.jsonl", tmp_path / "s2.jsonl"
    write_jsonl(first, [user("u1", "a"), assistant("a1")])
    files = SessionFiles()
    files.add_main(first)
    assert uuids(files) == ["u1", "a1"]
    write_jsonl(second, [user("u1", "a"), assistant("a1"), user("u2", "b")])  # a fork copies history
    files.add_main(second)
    write_jsonl(first, [assistant("a0")], append=True)  # the earlier file is still watched
    assert uuids(files) == ["a0", "u2"]
    assert files.stats.duplicates == 2
    assert uuids(files) == []


def test_known_history_of_main_and_subagents_is_indexed_not_sent(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    write_jsonl(main, [user("u1", "old"), assistant("a1")])
    sub = write_subagent(main, "x", "toolu_X", [assistant("s1", isSidechain=True)])
    files = SessionFiles()
    files.add_main(main, known={main: main.stat().st_size, sub: sub.stat().st_size})
    assert uuids(files) == []
    assert set(files.processed) == {"u1", "a1", "s1"}
    write_jsonl(main, [user("u2", "new")], append=True)
    jsonl, _ = subagent_paths(main, "x")
    write_jsonl(jsonl, [assistant("s2", isSidechain=True)], append=True)
    assert uuids(files) == ["u2", "s2"]


def test_malformed_lines_counted_and_truncated_last_line(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    main.write_bytes(b'not json\n[1,2]\n{"type":"user","uuid":"u1","message":{"content":"x"}}\n{"type":"assi')
    files = SessionFiles()
    files.add_main(main)
    assert uuids(files) == ["u1"]
    assert list(files.finish()) == []
    assert files.stats.malformed == {"not JSON": 1, "not a JSON object": 1, "truncated last line": 1}


def test_late_subagent_file_and_meta_are_picked_up(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    write_jsonl(main, [user("u1", "go")])
    files = SessionFiles()
    files.add_main(main)
    assert uuids(files) == ["u1"]
    jsonl, meta = subagent_paths(main, "late")
    write_jsonl(jsonl, [assistant("s1", isSidechain=True)])
    meta.write_text('{"toolUseId": "toolu_L"}')
    records = list(files.read_new())
    assert [(r.uuid, r.parent_tool_use_id) for r in records] == [("s1", "toolu_L")]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def racing_session(tmp_path: Path) -> tuple[Path, Path]:
    """The main file already has the Agent's result; the subagent file lacks its final answer
    (Claude's write cycle appended the main file first)."""
    main = tmp_path / "s1.jsonl"
    agent = {"type": "tool_use", "id": "toolu_A", "name": "Agent", "input": {"prompt": "p"}}
    result = [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "done"}]
    write_jsonl(
        main,
        [
            user("u1", "go"),
            assistant("a1", agent),
            user("r1", result, toolUseResult={"status": "completed", "agentId": "abc"}),
            assistant("a2", {"type": "text", "text": "after"}, stop_reason="end_turn"),
        ],
    )
    sub_records = [
        user("s1", "p", isSidechain=True),
        assistant("s2", {"type": "thinking", "thinking": "t"}, stop_reason="end_turn", isSidechain=True),
    ]
    sub = write_subagent(main, "abc", "toolu_A", sub_records)
    return main, sub


FINAL = assistant("s3", {"type": "text", "text": "the answer"}, stop_reason="end_turn", isSidechain=True)


def test_live_reading_holds_the_stopping_record_until_the_final_answer(tmp_path: Path) -> None:
    main, sub = racing_session(tmp_path)
    clock = FakeClock()
    files = SessionFiles(clock=clock)
    files.add_main(main)
    assert uuids(files) == ["u1", "a1", "s1", "s2"]  # r1 and what follows wait
    assert files.hold_wait() == pytest.approx(HOLD_MAX)
    clock.now += 0.1
    assert uuids(files) == []
    write_jsonl(sub, [FINAL], append=True)
    assert uuids(files) == ["s3", "r1", "a2"]
    assert files.hold_wait() is None


def test_held_records_are_released_after_hold_max(tmp_path: Path) -> None:
    main, _ = racing_session(tmp_path)
    clock = FakeClock()
    files = SessionFiles(clock=clock)
    files.add_main(main)
    assert uuids(files) == ["u1", "a1", "s1", "s2"]
    clock.now += HOLD_MAX
    assert uuids(files) == ["r1", "a2"]


def test_a_subagent_file_found_before_its_meta_is_read_once_the_meta_names_its_call(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    write_jsonl(main, [user("u1", "go")])
    clock = FakeClock()
    files = SessionFiles(clock=clock)
    files.add_main(main)
    assert uuids(files) == ["u1"]
    prompt = user("s1", "p", isSidechain=True)
    write_subagent(main, "abc", None, [prompt])  # its meta not written yet
    assert uuids(files) == []  # read untagged, the prompt would look like the main chain's
    assert files.hold_wait() == pytest.approx(HOLD_MAX)
    clock.now += 0.1
    write_subagent(main, "abc", "toolu_A", [prompt])
    assert [(r.uuid, r.parent_tool_use_id) for r in files.read_new()] == [("s1", "toolu_A")]
    assert files.hold_wait() is None
    write_subagent(main, "late", None, [user("l1", "q", isSidechain=True)])
    assert uuids(files) == []
    clock.now += HOLD_MAX  # an older Claude writes no meta: read anyway, matched by its prompt
    assert [(r.uuid, r.parent_tool_use_id) for r in files.read_new()] == [("l1", None)]
    assert uuids(files) == []


def test_final_read_and_replay_never_hold(tmp_path: Path) -> None:
    main, _ = racing_session(tmp_path)
    live = SessionFiles(clock=FakeClock())
    live.add_main(main)
    assert [r.uuid for r in live.read_new(final=True)] == ["u1", "a1", "s1", "s2", "r1", "a2"]
    finished = SessionFiles()  # no clock: the files are complete (happy replay)
    finished.add_main(main)
    assert uuids(finished) == ["u1", "a1", "s1", "s2", "r1", "a2"]


def test_only_the_files_that_changed_are_read(tmp_path: Path) -> None:
    main = tmp_path / "s1.jsonl"
    write_jsonl(main, [user("u1", "go")])
    one = write_subagent(main, "one", "toolu_1", [assistant("o1", isSidechain=True)])
    two = write_subagent(main, "two", "toolu_2", [assistant("t1", isSidechain=True)])
    files = SessionFiles()
    files.add_main(main)
    assert uuids(files) == ["u1", "o1", "t1"]
    write_jsonl(one, [assistant("o2", isSidechain=True)], append=True)
    write_jsonl(two, [assistant("t2", isSidechain=True)], append=True)
    write_jsonl(main, [user("u2", "more")], append=True)
    assert [r.uuid for r in files.read_new(changed={str(one)})] == ["o2"]
    three = write_subagent(main, "three", None, [assistant("h1", isSidechain=True)])
    # A new file in the subagents directory is found and read whole; the others wait.
    assert [r.uuid for r in files.read_new(changed={str(three)})] == ["h1"]
    assert [r.uuid for r in files.read_new(changed=None)] == ["u2", "t2"]
