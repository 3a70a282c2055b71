"""The continuity check after a switch (session/continuity.py), on hand-made transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from happy_launcher.session.continuity import _TAIL_CHUNK, check, mark, unanswered_prompt


def rec(uuid: str | None, parent: str | None = None, **more: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "user", "parentUuid": parent, **more}
    if uuid is not None:
        record["uuid"] = uuid
    return record


def append(path: Path, *records: dict[str, Any], raw: bytes = b"") -> None:
    with path.open("ab") as f:
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in records) + raw)


def test_the_leaf_is_the_last_main_chain_record(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    append(
        path, rec("a"), rec("b", "a"), rec("side", "b", isSidechain=True), rec(None, type="queue-operation")
    )
    chain = mark(path)
    assert (chain.leaf, chain.size) == ("b", path.stat().st_size)
    assert mark(tmp_path / "missing.jsonl").leaf is None


def test_the_leaf_is_found_behind_a_long_tail_of_records_without_uuid(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    filler = [rec(None, type="progress", data="x" * 500) for _ in range(3 * _TAIL_CHUNK // 500)]
    append(path, rec("a"), rec("b" * 40, "a"), *filler)
    assert mark(path).leaf == "b" * 40


def test_a_new_record_continues_or_breaks_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    append(path, rec("a"), rec("b", "a"))
    chain = mark(path)
    assert check(chain, path) == "unknown"  # nothing new yet
    append(
        path, rec(None, type="queue-operation"), raw=b'{"uuid": "c", "parentUuid": "b"'
    )  # still being written
    assert check(chain, path) == "unknown"
    with path.open("ab") as f:
        f.write(b"}\n")
    assert check(chain, path) == "continues"
    broken = tmp_path / "broken.jsonl"
    append(broken, rec("a"), rec("b", "a"))
    chain = mark(broken)
    append(broken, rec("c", "a"))  # a second branch from `a`: the model does not see `b`
    assert check(chain, broken) == "broken"


def test_a_compaction_boundary_continues_through_its_logical_parent(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    append(path, rec("a"))
    chain = mark(path)
    append(path, rec("c", None, logicalParentUuid="a"))
    assert check(chain, path) == "continues"


def test_a_new_session_file_must_hold_the_old_leaf(tmp_path: Path) -> None:
    old, fork, other = tmp_path / "old.jsonl", tmp_path / "fork.jsonl", tmp_path / "other.jsonl"
    append(old, rec("a"), rec("b", "a"))
    chain = mark(old)
    assert check(chain, fork) == "unknown"
    append(fork, rec("a"), rec("b", "a"), rec("c", "b"))
    append(other, rec("x"))
    assert check(chain, fork) == "continues"
    assert check(chain, other) == "broken"


def test_an_empty_chain_is_continued_by_anything(tmp_path: Path) -> None:
    assert check(mark(tmp_path / "none.jsonl"), tmp_path / "none.jsonl") == "continues"


def prompt(uuid: str, parent: str | None, content: Any, **more: Any) -> dict[str, Any]:
    return rec(uuid, parent, message={"role": "user", "content": content}, **more)


def reply(uuid: str, parent: str, model: str = "claude-x", **more: Any) -> dict[str, Any]:
    message = {"role": "assistant", "model": model, "content": [{"type": "text", "text": "ok"}]}
    return rec(uuid, parent, type="assistant", message=message, **more)


def test_a_conversation_left_on_a_prompt_is_found_unanswered(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    append(
        path,
        prompt("p1", None, "first"),
        reply("a1", "p1"),
        prompt("p2", "a1", [{"type": "text", "text": "hi"}]),
    )
    append(path, rec(None, type="custom-title"), prompt("m", "p2", "caveat", isMeta=True))
    leaf = unanswered_prompt(path)
    assert leaf is not None and (leaf.uuid, leaf.text) == ("p2", "hi")
    # Claude's own repair when such a session is resumed is no answer
    append(path, reply("s", "p2", model="<synthetic>"))
    assert unanswered_prompt(path) == leaf


def test_a_reply_an_api_error_or_a_tool_result_is_no_unanswered_prompt(tmp_path: Path) -> None:
    answered, failed, mid_turn = tmp_path / "a.jsonl", tmp_path / "f.jsonl", tmp_path / "t.jsonl"
    append(answered, prompt("p1", None, "hi"), reply("a1", "p1"))
    append(failed, prompt("p1", None, "hi"), reply("e", "p1", model="<synthetic>", isApiErrorMessage=True))
    append(
        mid_turn, prompt("p1", None, "hi"), prompt("r", "p1", [{"type": "tool_result", "tool_use_id": "t"}])
    )
    assert [unanswered_prompt(p) for p in (answered, failed, mid_turn, tmp_path / "missing.jsonl")] == [
        None
    ] * 4
