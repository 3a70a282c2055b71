"""`happy replay` through the CLI: output, summary, errors, malformed input."""

from __future__ import annotations

import io
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pexpect
import pytest
from typer.testing import CliRunner

from happy_launcher.cli.app import app
from happy_launcher.protocol import Envelope
from tests.support.transcripts import assistant, user, write_jsonl

runner = CliRunner()


def replay(path: Path) -> tuple[int, list[Envelope], str]:
    result = runner.invoke(app, ["replay", str(path)])
    envelopes = [Envelope.model_validate_json(line) for line in result.stdout_bytes.splitlines()]
    return result.exit_code, envelopes, result.stderr


def two_turns() -> list[dict[str, object]]:
    return [
        user("u1", "hello"),
        assistant("a1", {"type": "text", "text": "hi!"}, stop_reason="end_turn"),
        {
            "type": "system",
            "subtype": "turn_duration",
            "uuid": "sd1",
            "timestamp": "2026-11-21T10:00:02.000Z",
        },
        user("u2", "bye"),
        assistant("a2", {"type": "text", "text": "ciao"}, stop_reason="end_turn"),
    ]


def test_replay_prints_envelopes_with_record_times(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_jsonl(path, two_turns())
    code, envs, err = replay(path)
    assert code == 0
    assert [(e.role, e.ev.t) for e in envs] == [
        ("user", "text"),
        ("agent", "turn-start"),
        ("agent", "text"),
        ("agent", "turn-end"),
        ("user", "text"),
        ("agent", "turn-start"),
        ("agent", "text"),
        ("agent", "turn-end"),  # closed at end of file: the last reply ended its turn
    ]
    t0 = int(datetime(2026, 11, 21, 10, tzinfo=UTC).timestamp() * 1000)
    assert (envs[0].time, envs[2].time) == (t0, t0 + 1000)
    assert envs[-1].ev.model_dump() == {"t": "turn-end", "status": "completed"}
    assert "5 records -> 8 envelopes" in err


@pytest.mark.parametrize(
    ("path", "message"),
    [("missing.jsonl", "no such transcript"), (".", "is a directory")],
)
def test_unreadable_input_is_a_one_line_error_exit_2(tmp_path: Path, path: str, message: str) -> None:
    result = runner.invoke(app, ["replay", str(tmp_path / path)])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


def test_malformed_input_loses_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = [orjson.dumps(r) for r in two_turns()]
    huge = orjson.dumps(user("big", "x" * (20 * 1024 * 1024)))
    bad_utf8 = b'{"type":"user","uuid":"u-utf8","message":{"content":"caf\xe9 \xff"}}'
    lines = [
        good[0],
        b"this is not json",
        b"",
        b'{"type":"brand-new-kind","uuid":"k1"}',
        good[1],
        good[2],
        huge,
        bad_utf8,
        *good[3:],
        b'{"type":"assistant","uuid":"cut","mess',  # truncated last line
    ]
    path.write_bytes(b"\n".join(lines))
    code, envs, err = replay(path)
    assert code == 0
    texts = [e.ev.model_dump().get("text") for e in envs if e.ev.t == "text"]
    assert texts[:3] == ["hello", "hi!", "x" * (20 * 1024 * 1024)]
    assert texts[3] == "caf\ufffd \ufffd"  # invalid UTF-8 kept, with replacement characters
    assert texts[4:] == ["bye", "ciao"]
    assert "1 malformed lines skipped (not JSON)" in err
    assert "1 malformed lines skipped (truncated last line)" in err
    assert "brand-new-kind" in err


def test_protocol_schema_command() -> None:
    result = runner.invoke(app, ["protocol", "schema"])
    assert result.exit_code == 0
    assert orjson.loads(result.stdout)["title"] == "Envelope"


def test_follow_tails_new_records_and_leaves_the_turn_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_jsonl(path, [user("u1", "hello")])
    happy = Path(sys.executable).with_name("happy")
    child = pexpect.spawn(str(happy), ["replay", "--follow", str(path)], timeout=10)
    child.logfile_read = seen = io.BytesIO()
    try:
        child.expect(rb'"text":"hello"')
        write_jsonl(path, [assistant("a1", {"type": "text", "text": "streamed later"})], append=True)
        child.expect(rb'"t":"turn-start"')
        child.expect(rb'"text":"streamed later"')
        child.sendintr()
        child.expect(rb"2 records -> 3 envelopes")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert b"turn-end" not in seen.getvalue()  # --follow leaves the open turn open
