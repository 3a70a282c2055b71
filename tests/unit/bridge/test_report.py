"""The bridge's status file through Report: its content, 0600, one write and one log line per
change (a retry's same state is neither), the first settled state told once, and read back."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from happy_launcher.bridge.process.report import STATUS_FILE, Report, read_status


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_the_status_file_says_the_state_and_is_private(tmp_path: Path) -> None:
    clock = Clock()
    report = Report(tmp_path, pid=42, server="http://s", clock=clock)
    path = tmp_path / STATUS_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {
        "pid": 42,
        "started_at": "2027-01-15T08:00:00+00:00",
        "server": "http://s",
        "state": "starting",
        "last_error": None,
        "updated_at": "2027-01-15T08:00:00+00:00",
    }
    clock.now += 61
    report.state("offline", "cannot reach http://s\n(ConnectError)")
    body = json.loads(path.read_text())
    assert (body["state"], body["last_error"]) == ("offline", "cannot reach http://s (ConnectError)")
    assert (body["started_at"], body["updated_at"]) == (
        "2027-01-15T08:00:00+00:00",
        "2027-01-15T08:01:01+00:00",
    )
    assert read_status(tmp_path) == report.current
    assert report.current.line() == "offline: cannot reach http://s (ConnectError)"


def test_each_change_is_one_log_line_and_a_repeat_is_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    report = Report(tmp_path, pid=1, server="http://s", clock=clock)
    caplog.set_level(logging.INFO, logger="happy_launcher.bridge.process.report")
    report.state("offline", "down")
    clock.now += 5
    report.state("offline", "down")  # a retry failing the same way
    assert report.current.updated_at == "2027-01-15T08:00:00+00:00"
    report.state("connected")
    report.error("one post failed")
    assert [r.getMessage() for r in caplog.records] == [
        "offline: down",
        "connected",
        "connected: one post failed",
    ]
    assert read_status(tmp_path) == report.current


def test_the_first_settled_state_is_told_once(tmp_path: Path) -> None:
    told: list[str] = []
    report = Report(
        tmp_path, pid=1, server="http://s", clock=Clock(), on_settled=lambda: told.append("ready")
    )
    report.state("starting")
    assert told == []
    report.state("offline", "down")
    report.state("connected")
    assert told == ["ready"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"pid": 1}',
        '{"pid": 1, "started_at": "", '
        '"server": "", "state": "dancing", "last_error": null, "updated_at": ""}',
    ],
)
def test_an_unreadable_status_file_is_none(tmp_path: Path, text: str) -> None:
    (tmp_path / STATUS_FILE).write_text(text)
    assert read_status(tmp_path) is None


def test_no_status_file_is_none(tmp_path: Path) -> None:
    assert read_status(tmp_path) is None
