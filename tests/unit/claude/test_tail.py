"""LineTail: complete lines only, by byte offset; truncation, replacement, oversized lines."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from happy_launcher.claude.tail import READ_AHEAD, LineTail, StreamTail


def read_all(tail: LineTail, chunk: int = 1 << 20) -> list[bytes]:
    out: list[bytes] = []
    while lines := tail.read_lines(chunk):
        out += lines
    return out


def test_missing_file_reads_nothing(tmp_path: Path) -> None:
    assert LineTail(tmp_path / "nope.jsonl").read_lines() == []


def test_only_complete_lines_and_partial_kept(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":')
    tail = LineTail(p)
    assert read_all(tail) == [b'{"a":1}']
    with p.open("ab") as f:
        f.write(b'2}\n\n{"c":3}\n')
    assert read_all(tail) == [b'{"b":2}', b'{"c":3}']
    assert tail.take_partial() is None


def test_small_chunks_reassemble_lines(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = [b'{"n":%d,"pad":"%s"}' % (i, b"x" * i) for i in range(50)]
    p.write_bytes(b"\n".join(lines) + b"\n")
    assert read_all(LineTail(p), chunk=7) == lines


def test_truncated_file_restarts_from_zero(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"one\ntwo\n")
    tail = LineTail(p)
    assert read_all(tail) == [b"one", b"two"]
    p.write_bytes(b"3\n")
    assert read_all(tail) == [b"3"]
    assert tail.stats.truncated == 1


def test_replaced_file_is_read_from_the_start(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"old-1\nold-2\n")
    tail = LineTail(p)
    read_all(tail)
    other = tmp_path / "new.jsonl"
    other.write_bytes(b"new-1\nnew-2\nnew-3\n")
    other.replace(p)
    assert read_all(tail) == [b"new-1", b"new-2", b"new-3"]
    assert tail.stats.replaced == 1


def _descriptors_of(path: Path) -> int:
    fds = Path("/proc/self/fd")
    count = 0
    for fd in os.listdir(fds):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            count += os.readlink(fds / fd) in (os.fspath(path), f"{path} (deleted)")
    return count


def test_a_kept_file_stays_open_between_reads_until_replaced_or_dropped(tmp_path: Path) -> None:
    # One descriptor per main transcript, not one open and close per read (the live scanner
    # reads once per record Claude writes); a file renamed over it is opened in its place.
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"1\n")
    tail = LineTail(p, keep_open=True)
    assert read_all(tail) == [b"1"]
    with p.open("ab") as f:
        f.write(b"2\n")
    assert _descriptors_of(p) == 1
    assert read_all(tail) == [b"2"]
    assert _descriptors_of(p) == 1
    other = tmp_path / "new.jsonl"
    other.write_bytes(b"new\n")
    other.replace(p)
    assert read_all(tail) == [b"new"]
    assert _descriptors_of(p) == 1  # the old file's descriptor was closed
    del tail
    assert _descriptors_of(p) == 0
    other_tail = LineTail(p)  # the default: open only while reading
    assert read_all(other_tail) == [b"new"]
    assert _descriptors_of(p) == 0


def test_a_kept_file_is_read_on_without_a_stat_until_nothing_new_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"1\n")
    tail = LineTail(p, keep_open=True)
    assert read_all(tail) == [b"1"]
    stats: list[Path] = []
    real_stat = Path.stat

    def counted(self: Path, **kwargs: bool) -> os.stat_result:
        stats.append(self)
        return real_stat(self, **kwargs)

    monkeypatch.setattr(Path, "stat", counted)
    big = b"x" * (READ_AHEAD + 10)  # more than one read's buffer
    with p.open("ab") as f:
        f.write(b"2\n" + big + b"\n3\n")
    assert tail.read_lines() == [b"2"] and stats == []  # one read, no stat: the record's cost
    assert not tail.caught_up  # the buffer was full: more may be there
    assert read_all(tail) == [big, b"3"]
    assert tail.caught_up
    p.write_bytes(b"again\n")  # truncated: seen once nothing more comes
    assert read_all(tail) == [b"again"] and tail.stats.truncated == 1 and stats


def test_oversized_line_is_skipped_and_counted(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"a\n" + b"x" * 5000 + b"\nb\n")
    tail = LineTail(p, max_line=1000)
    assert read_all(tail, chunk=512) == [b"a", b"b"]
    assert tail.stats.oversized == 1


def test_stream_tail_reads_a_pipe_in_order_with_the_same_line_rules() -> None:
    read_end, write_end = os.pipe()
    try:
        tail = StreamTail(Path("-"), fd=read_end, max_line=1000)
        os.write(write_end, b'{"a":1}\n{"b":')
        assert tail.read_lines() == [b'{"a":1}']  # what is there now; the half line waits
        os.write(write_end, b"2}\n" + b"x" * 5000 + b"\nlast")
        os.close(write_end)
        assert read_all(tail, chunk=512) == [b'{"b":2}']  # then the oversized line is skipped …
        assert tail.read_lines() == []  # … to the end of the stream, which stays ended
        assert tail.take_partial() == b"last"
        assert tail.stats.oversized == 1
    finally:
        os.close(read_end)
