"""scripts/drift's comparisons (tests/support/drift.py), on the committed goldens."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import orjson

from happy_launcher.protocol import SequentialIds
from happy_launcher.session.replay import replay_file
from tests.support import drift
from tests.support.drift import Row

FIXTURES = Path(__file__).parents[1] / "fixtures"


def records(scenario: str) -> list[dict[str, Any]]:
    (path,) = (FIXTURES / "golden" / scenario).glob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def shapes(path: Path) -> list[str]:
    out = io.BytesIO()
    replay_file(path, SequentialIds(), out)
    return drift.envelope_shapes(orjson.loads(line) for line in out.getvalue().splitlines())


def failing(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.status == "FAIL"]


def test_the_same_goldens_compare_clean() -> None:
    feats = drift.record_features(records("bash_tool"))
    rows = drift.feature_rows("golden transcript", feats, set(feats))
    assert rows and all(r.status == "ok" for r in rows)
    assert ("record kind", "assistant") in feats
    assert ("subtype", "system/turn_duration") in feats
    assert ("subtype", "assistant/block:tool_use") in feats
    assert ("key", "user.toolUseResult") in feats


def test_a_renamed_record_kind_fails_naming_both_names(tmp_path: Path) -> None:
    committed = records("plain_reply")
    altered = [{**r, "type": "assistant_v2"} if r.get("type") == "assistant" else r for r in committed]
    rows = drift.feature_rows(
        "golden transcript", drift.record_features(altered), drift.record_features(committed)
    )
    (row,) = failing(rows)
    assert row.check == "golden transcript: record kinds"
    assert "+ assistant" in row.detail and "- assistant_v2" in row.detail
    assert drift.exit_code(rows) == 1
    assert "assistant_v2" in drift.render(rows)

    # The same renaming, replayed: the mapper does not know the kind and the envelopes change.
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in altered))
    (golden,) = (FIXTURES / "golden" / "plain_reply").glob("*.jsonl")
    (env_row,) = drift.shape_rows(
        "golden", {"plain_reply": shapes(golden)}, {"plain_reply": shapes(tmp_path / "t.jsonl")}
    )
    assert env_row.status == "FAIL" and "plain_reply" in env_row.detail and "text(text)" in env_row.detail
    unknown = replay_file(tmp_path / "t.jsonl", SequentialIds(), io.BytesIO()).mapper.get("unknown_kinds")
    assert isinstance(unknown, dict)
    (kind_row,) = drift.unknown_kind_rows("golden", {}, unknown)
    assert (kind_row.status, kind_row.detail) == ("FAIL", "assistant_v2")


def test_new_keys_and_subtypes_are_listed_without_failing() -> None:
    committed = records("thinking")
    fresh = [{**r, "newField": 1} if r.get("type") == "user" else r for r in committed]
    fresh.append({"type": "system", "subtype": "brand_new", "uuid": "x"})
    rows = drift.feature_rows(
        "golden transcript", drift.record_features(committed), drift.record_features(fresh)
    )
    changed = {r.check: r.detail for r in rows if r.status == "changed"}
    assert changed == {
        "golden transcript: keys": "+ user.newField",
        "golden transcript: subtypes": "+ system/brand_new",
    }
    assert drift.exit_code(rows) == 0


def test_hook_fields_fail_only_when_one_happy_reads_vanishes() -> None:
    payloads = [json.loads(line) for line in (FIXTURES / "hooks" / "payloads.jsonl").read_text().splitlines()]
    old = drift.hook_features(payloads)
    assert ("hook field", "PermissionRequest.tool_input") in old
    no_effort = drift.hook_features([{k: v for k, v in p.items() if k != "effort"} for p in payloads])
    assert drift.exit_code(drift.feature_rows("hooks", old, no_effort)) == 0
    no_prompt = drift.hook_features([{k: v for k, v in p.items() if k != "prompt"} for p in payloads])
    rows = drift.feature_rows("hooks", old, no_prompt)
    assert [r.detail for r in failing(rows)] == ["- UserPromptSubmit.prompt"]
    no_start = drift.hook_features([p for p in payloads if p["hook_event_name"] != "SessionStart"])
    assert any(r.check == "hooks: hook events" for r in failing(drift.feature_rows("hooks", old, no_start)))


def test_sdk_stream_features_leave_our_own_lines_out() -> None:
    lines = [
        json.loads(line) for line in (FIXTURES / "sdk" / "text" / "stream.jsonl").read_text().splitlines()
    ]
    feats = drift.stream_features(lines)
    assert ("sdk message", "ResultMessage") in feats and ("sdk subtype", "SystemMessage/init") in feats
    assert ("sdk subtype", "StreamEvent/message_start") in feats
    assert not any(name.startswith("Prompt") for _, name in feats)


def test_junit_rows_name_each_smoke_test_and_a_missing_one_fails() -> None:
    xml = """<testsuites><testsuite>
      <testcase classname="tests.e2e.test_a" name="test_ok" time="1.5"/>
      <testcase classname="tests.e2e.test_b" name="test_bad" time="2"><failure message="boom"/></testcase>
    </testsuite></testsuites>"""
    names = {
        "tests/e2e/test_a.py::test_ok": "a",
        "tests/e2e/test_b.py::test_bad": "b",
        "tests/e2e/test_c.py::test_gone": "c",
    }
    assert drift.junit_rows(xml, names) == [
        Row("smoke: a", "ok", "1.5s"),
        Row("smoke: b", "FAIL", "failure: boom"),
        Row("smoke: c", "FAIL", "did not run"),
    ]


def test_render_wraps_details_under_their_column() -> None:
    text = drift.render([Row("x", "ok", "word " * 40)], width=60)
    lines = text.splitlines()
    assert lines[0].startswith("check") and len(lines) > 3
    assert all(line.startswith(" " * 12) for line in lines[3:])
