"""Ending the sessions of launchers that died (store/sweep.py, home/procs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from happy_launcher.home.procs import ProcessId, is_alive, running, start_time, this_process
from happy_launcher.protocol import EnvelopeFactory, SequentialIds, StartEv, TextEv, TurnStartEv
from happy_launcher.store.sessions import SessionStore
from happy_launcher.store.sweep import (
    KEPT_SETTINGS_DAYS,
    clean_kept_settings,
    clean_run_dirs,
    end_dead_sessions,
)

TURN = "turn00000000000000000001"
SUB = "sub000000000000000000001"


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_liveness_is_the_pid_and_its_start_time() -> None:
    me = this_process(os.getpid())
    assert me.start is not None and is_alive(me)
    assert not is_alive(ProcessId(os.getpid(), me.start + 1))  # a recycled pid is another process
    assert not is_alive(ProcessId(dead_pid(), me.start))
    assert start_time(dead_pid()) is None


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore.open(tmp_path / "home")


def kinds(store: SessionStore, session: str) -> list[str]:
    return [orjson.loads(body)["ev"]["t"] for _, body in store.raw_envelopes(session)]


def test_a_dead_launchers_session_is_ended_with_its_activity_closed(store: SessionStore) -> None:
    make = EnvelopeFactory(SequentialIds("env"))
    dead, live = ProcessId(dead_pid(), 1), this_process(os.getpid())
    store.create_session("gone", cwd="/w", started_at=1, owner=dead)
    store.create_session("here", cwd="/w", started_at=1, owner=live)
    store.create_session("old", cwd="/w", started_at=1)  # from a happy that did not record its pid
    store.append_envelopes(
        "gone",
        [
            make.user_text("hi", 1),
            make.agent(TurnStartEv(), turn=TURN, time=1),
            make.agent(StartEv(title="sub"), turn=TURN, time=1, subagent=SUB),
            make.agent(TextEv(text="working"), turn=TURN, time=1, subagent=SUB),
        ],
    )
    ended = end_dead_sessions(store, SequentialIds("new"), lambda: 99)
    assert sorted(ended) == ["gone", "old"]
    statuses = {s.id: (s.status, s.ended_at) for s in store.list_sessions()}
    assert statuses == {"gone": ("failed", 99), "here": ("running", None), "old": ("failed", 99)}
    assert kinds(store, "gone")[-2:] == ["stop", "turn-end"]
    last = orjson.loads(store.raw_envelopes("gone")[-1][1])
    assert last["ev"] == {"t": "turn-end", "status": "failed"} and last["turn"] == TURN
    assert kinds(store, "old") == []  # nothing was open
    assert end_dead_sessions(store, SequentialIds("new"), lambda: 100) == []  # done once


def test_a_dead_session_that_cannot_be_ended_does_not_keep_the_others_running(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    dead = ProcessId(dead_pid(), 1)
    store.create_session("lost", cwd="/w", started_at=1, owner=dead)
    store.create_session("gone", cwd="/w", started_at=2, owner=dead)
    lost = store.data_file("lost")
    store.close()
    lost.unlink()
    with SessionStore.open(lost.parent.parent) as again:
        assert end_dead_sessions(again, SequentialIds("new"), lambda: 9) == ["gone"]
        assert {s.id: s.status for s in again.list_sessions()} == {"lost": "running", "gone": "failed"}
    assert "session lost: its launcher is gone, but it cannot be ended" in caplog.text
    assert "lost.db is missing" in caplog.text


def test_a_subagent_outliving_its_turn_is_stopped_in_a_turn_of_its_own(store: SessionStore) -> None:
    make = EnvelopeFactory(SequentialIds("env"))
    store.create_session("gone", cwd="/w", started_at=1, owner=ProcessId(dead_pid(), 1))
    store.append_envelopes("gone", [make.agent(StartEv(title="bg"), turn=TURN, time=1, subagent=SUB)])
    end_dead_sessions(store, SequentialIds("new"), lambda: 5)
    assert kinds(store, "gone") == ["start", "turn-start", "stop", "turn-end"]


def test_the_mapper_state_closes_the_turn_when_there_is_one(store: SessionStore) -> None:
    store.create_session("gone", cwd="/w", started_at=1, owner=ProcessId(dead_pid(), 1))
    store.save_mapper_state("gone", orjson.dumps({"turn": TURN}).decode())
    end_dead_sessions(store, SequentialIds("new"), lambda: 5)
    assert kinds(store, "gone") == ["turn-end"]
    state = store.load_mapper_state("gone")
    assert state is not None and orjson.loads(state)["turn"] is None


def test_run_dirs_of_dead_launchers_are_removed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    gone, mine, other = run / f"{dead_pid()}-abc", run / f"{os.getpid()}-def", run / "notes"
    for d in (gone, mine, other):
        d.mkdir(parents=True)
    (gone / "hook-events.jsonl").write_text("x")
    clean_run_dirs(run)
    assert sorted(p.name for p in run.iterdir()) == sorted([mine.name, "notes"])
    clean_run_dirs(tmp_path / "missing")  # nothing to do, no error


def test_kept_overlays_go_when_they_are_old(tmp_path: Path) -> None:
    now_ms = 10_000_000_000
    old, recent = tmp_path / f"{dead_pid()}-old.json", tmp_path / f"{os.getpid()}-new.json"
    for path, age_days in ((old, KEPT_SETTINGS_DAYS), (recent, KEPT_SETTINGS_DAYS - 1)):
        path.write_text("{}")
        mtime = now_ms / 1000 - age_days * 86400
        os.utime(path, (mtime, mtime))
    clean_kept_settings(tmp_path, now_ms)
    assert [p.name for p in tmp_path.iterdir()] == [recent.name]
    clean_kept_settings(tmp_path / "missing", now_ms)  # nothing to do, no error


def test_without_proc_the_kernel_says_which_pids_run(tmp_path: Path) -> None:
    no_proc = tmp_path / "no-proc"
    assert running(os.getpid(), no_proc) and not running(dead_pid(), no_proc)
    assert is_alive(ProcessId(os.getpid(), 12345), no_proc)  # no start time to compare: the pid decides
    assert not is_alive(ProcessId(dead_pid(), 12345), no_proc)


def test_a_session_another_start_ended_first_is_not_closed_twice(store: SessionStore) -> None:
    make = EnvelopeFactory(SequentialIds("env"))
    store.create_session("gone", cwd="/w", started_at=1, owner=ProcessId(dead_pid(), 1))
    store.append_envelopes("gone", [make.agent(TurnStartEv(), turn=TURN, time=1)])
    stale = store.running_sessions()  # what a second happy, starting at the same time, read
    assert end_dead_sessions(store, SequentialIds("new"), lambda: 5) == ["gone"]
    assert stale == [("gone", stale[0][1])]
    late = [make.agent(TurnStartEv(), turn=TURN, time=6)]
    assert not store.end_abandoned("gone", late, ended_at=6, mapper_state=None)
    assert kinds(store, "gone") == ["turn-start", "turn-end"]
    assert [(s.status, s.ended_at) for s in store.list_sessions()] == [("failed", 5)]
