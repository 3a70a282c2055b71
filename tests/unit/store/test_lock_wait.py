"""A write that meets another process's write lock waits by short pauses, not SQLite's
whole-millisecond sleeps, and still gives up at the busy timeout."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from happy_launcher.errors import StoreError
from happy_launcher.protocol import Envelope, EnvelopeFactory, SequentialIds, TextEv
from happy_launcher.store.sessions import SessionStore
from tests.unit.store.test_store import TURN


def envelope(text: str) -> list[Envelope]:
    return [EnvelopeFactory(SequentialIds(f"e{text}")).agent(TextEv(text=text), turn=TURN, time=0)]


def test_a_write_waits_for_the_lock_by_sub_millisecond_pauses(tmp_path: Path) -> None:
    home = tmp_path / "home"
    SessionStore.open(home).create_session("s1", cwd="/w", started_at=1)
    holder = sqlite3.connect(home / "sessions.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another launcher, mid-commit
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:
            holder.execute("COMMIT")  # the other commit ends during the third pause

    with SessionStore.open(home, sleep=pause) as store:
        assert store.append_envelopes("s1", envelope("a")) == [1]
        assert pauses == [50e-6, 100e-6, 200e-6]  # then it got the lock
        pauses.clear()
        assert store.append_envelopes("s1", envelope("b")) == [2]
        assert pauses == []  # no one else writing: no pause
        assert store.list_sessions()[0].id == "s1"  # reads are untouched


def test_a_write_gives_up_at_the_busy_timeout(tmp_path: Path) -> None:
    home = tmp_path / "home"
    SessionStore.open(home).create_session("s1", cwd="/w", started_at=1)
    holder = sqlite3.connect(home / "sessions.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(seconds)  # the real pause: the timeout is on the real clock

    with (
        SessionStore.open(home, busy_timeout=0.05, sleep=pause) as store,
        pytest.raises(StoreError, match="locked by another process"),
    ):
        store.append_envelopes("s1", envelope("a"))
    assert pauses and max(pauses) == 1e-3  # growing, capped at a millisecond
    holder.execute("ROLLBACK")
