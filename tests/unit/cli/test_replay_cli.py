"""`happy replay` through the CLI: output, summary, errors, malformed input."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pexpect
import pytest

from happy_launcher.protocol import Envelope, parse_envelope
from tests.support.transcripts import assistant, user, write_jsonl

HAPPY = str(Path(sys.executable).with_name("happy"))


def replay(path: Path) -> tuple[int, list[Envelope], str]:
    done = happy("replay", str(path))
    envelopes = [parse_envelope(line) for line in done.stdout.splitlines()]
    return done.returncode, envelopes, done.stderr.decode()


def happy(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([HAPPY, *args], capture_output=True, timeout=60, check=False)


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
    assert envs[-1].to_dict()["ev"] == {"t": "turn-end", "status": "completed"}
    assert "5 records -> 8 envelopes" in err


@pytest.mark.parametrize(
    ("path", "message"),
    [("missing.jsonl", "no such transcript"), (".", "is a directory")],
)
def test_unreadable_input_is_a_one_line_error_exit_2(tmp_path: Path, path: str, message: str) -> None:
    done = happy("replay", str(tmp_path / path))
    assert done.returncode == 2
    assert message in done.stderr.decode() and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == b""


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
    texts = [e.to_dict()["ev"].get("text") for e in envs if e.ev.t == "text"]
    assert texts[:3] == ["hello", "hi!", "x" * (20 * 1024 * 1024)]
    assert texts[3] == "caf\ufffd \ufffd"  # invalid UTF-8 kept, with replacement characters
    assert "1 lines with invalid UTF-8 (replaced)" in err  # … and counted, not silent
    assert texts[4:] == ["bye", "ciao"]
    assert "1 malformed lines skipped (not JSON)" in err
    assert "1 malformed lines skipped (truncated last line)" in err
    assert "brand-new-kind" in err


def test_protocol_schema_command() -> None:
    done = happy("protocol", "schema")
    assert done.returncode == 0
    assert orjson.loads(done.stdout)["title"] == "Envelope"


def test_follow_tails_new_records_and_leaves_the_turn_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_jsonl(path, [user("u1", "hello")])
    happy = Path(sys.executable).with_name("happy")
    child = pexpect.spawn(str(happy), ["replay", "--follow", str(path)], timeout=10)
    child.logfile_read = seen = io.BytesIO()
    try:
        child.expect(rb'"text":"hello"')
        child.expect(rb'"t":"turn-start"')  # Claude took the prompt: its turn starts before any reply
        write_jsonl(path, [assistant("a1", {"type": "text", "text": "streamed later"})], append=True)
        child.expect(rb'"text":"streamed later"')
        child.sendintr()
        child.expect(rb"2 records -> 3 envelopes")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert b"turn-end" not in seen.getvalue()  # --follow leaves the open turn open


def test_a_finished_transcript_closes_the_turn_of_an_unanswered_prompt(tmp_path: Path) -> None:
    """Design §2: read to its end, a transcript is finished; the open turn is closed `completed`
    only if its last reply ended the turn (stop_reason end_turn), else `cancelled`."""
    path = tmp_path / "s.jsonl"
    write_jsonl(path, [*two_turns()[:3], user("u2", "no reply to this")])
    code, envs, _ = replay(path)
    assert code == 0
    assert [(e.role, e.ev.t) for e in envs][-3:] == [
        ("user", "text"),
        ("agent", "turn-start"),
        ("agent", "turn-end"),
    ]
    assert envs[-1].to_dict()["ev"] == {"t": "turn-end", "status": "cancelled"}
    assert envs[-1].turn == envs[-2].turn


# -- pipes, FIFOs, stdin and output errors, through the real command ---------------------------------


def shell(script: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, timeout=60, env={**os.environ, "HAPPY": HAPPY, **env}
    )


def shape(stdout: bytes) -> list[tuple[str, dict[str, object]]]:
    """The envelopes without their random ids."""
    envs = [parse_envelope(line) for line in stdout.splitlines()]
    return [(e.role, e.to_dict()["ev"]) for e in envs]


@pytest.mark.parametrize(
    "script",
    [
        'cat "$T" | "$HAPPY" replay /dev/stdin',
        'cat "$T" | "$HAPPY" replay -',
        '"$HAPPY" replay <(cat "$T")',
        'mkfifo "$T.fifo" && { cat "$T" > "$T.fifo" & "$HAPPY" replay "$T.fifo"; }',
        '"$HAPPY" replay - < "$T"',
    ],
    ids=["pipe-dev-stdin", "pipe-dash", "process-substitution", "fifo", "dash-redirected-file"],
)
def test_streams_replay_like_the_file(tmp_path: Path, script: str) -> None:
    path = tmp_path / "s.jsonl"
    write_jsonl(path, [*two_turns(), user("u3", "unanswered")])
    with path.open("ab") as f:
        f.write(b'{"type":"user","uuid":"u-bad","message":{"content":"caf\xe9"}}\nnot json\n')
    from_file = shell('"$HAPPY" replay "$T"', T=str(path))
    from_stream = shell(script, T=str(path))
    assert from_stream.returncode == 0, from_stream.stderr
    assert shape(from_stream.stdout) == shape(from_file.stdout)
    assert shape(from_file.stdout)[-1] == ("agent", {"t": "turn-end", "status": "cancelled"})
    assert from_stream.stderr == from_file.stderr
    assert b"1 lines with invalid UTF-8 (replaced)" in from_stream.stderr
    assert b"1 malformed lines skipped (not JSON)" in from_stream.stderr


def test_follow_on_a_stream_reads_to_its_end_and_leaves_the_turn_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_jsonl(path, [*two_turns()[:3], user("u2", "unanswered")])
    done = shell('cat "$T" | "$HAPPY" replay --follow -', T=str(path))
    assert done.returncode == 0, done.stderr
    assert [ev["t"] for _, ev in shape(done.stdout)][-2:] == ["text", "turn-start"]
    assert b"4 records -> 6 envelopes" in done.stderr


def big_transcript(path: Path) -> None:
    """Far more output than a pipe holds (64 KiB), so that writing blocks and fails."""
    records = []
    for i in range(300):
        records += [
            user(f"u{i}", f"question {i} " + "x" * 500),
            assistant(f"a{i}", {"type": "text", "text": "y" * 500}),
        ]
    write_jsonl(path, records)


def test_output_error_is_one_line_and_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    big_transcript(path)
    done = shell('"$HAPPY" replay "$T" > /dev/full', T=str(path))
    assert done.returncode == 1
    assert done.stderr == b"happy: cannot write the envelopes to the output: No space left on device\n"


def test_a_reader_that_stops_early_is_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    big_transcript(path)
    done = shell('"$HAPPY" replay "$T" | head -c 100 > /dev/null; echo "${PIPESTATUS[0]}" >&2', T=str(path))
    assert done.stderr == b"0\n"  # no traceback, no "Exception ignored" at exit


def test_timestamps_before_1970_do_not_make_negative_times(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_jsonl(
        path,
        [
            user("u1", "hello", timestamp="1960-01-01T00:00:00.000Z"),
            assistant("a1", {"type": "text", "text": "hi"}, timestamp="0001-01-01T00:00:00+00:00"),
            user("u2", "again"),  # 2026
        ],
    )
    code, envs, _ = replay(path)
    assert code == 0
    assert [e.time for e in envs if e.ev.t == "text"][:2] == [0, 0]  # no usable time yet
    assert envs[-1].time > 0
