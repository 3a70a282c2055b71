"""Ending what a dead launcher left behind (kill -9, a crash, a power cut): its session stays
`running` and its turn open, and its private run directory stays. Every start of happy sweeps
them, off Claude's start-up path: the session ends `failed` with what was open closed, exactly
as if the launcher had seen Claude fail, and the run directory goes. The `--settings` overlays
kept for Claude's resume hints go once they are `KEPT_SETTINGS_DAYS` old."""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.mapper_state import MapperState
from happy_launcher.errors import StoreError
from happy_launcher.home.procs import ProcessId, is_alive, running
from happy_launcher.protocol import (
    Clock,
    Envelope,
    EnvelopeFactory,
    IdFactory,
    StopEv,
    TurnEndEv,
    TurnStartEv,
)
from happy_launcher.store.sessions import SessionStore

_log = logging.getLogger(__name__)
_PAGE = 5_000
KEPT_SETTINGS_DAYS = 30


def end_dead_sessions(
    store: SessionStore, ids: IdFactory, clock: Clock, alive: Callable[[ProcessId], bool] = is_alive
) -> list[str]:
    """End every `running` session whose launcher is gone; returns their ids. A session from a
    happy that did not record its launcher counts as gone."""
    ended = []
    for session_id, owner in store.running_sessions():
        if owner is not None and alive(owner):
            continue
        try:
            if _end_dead(store, session_id, ids, clock()):
                _log.warning("session %s: its launcher is gone; ended as failed", session_id)
                ended.append(session_id)
        except StoreError as exc:  # this one's data (its database lost, say): the others still end
            _log.warning("session %s: its launcher is gone, but it cannot be ended: %s", session_id, exc)
    return ended


def _end_dead(store: SessionStore, session_id: str, ids: IdFactory, now: int) -> bool:
    state = store.load_mapper_state(session_id)
    if state is not None:
        mapper = Mapper(ids, MapperState.from_dict(orjson.loads(state)))
        closing = mapper.close_turn("failed", now)
        new_state: str | None = orjson.dumps(mapper.state.snapshot()).decode()
    else:
        closing, new_state = _close_from_envelopes(store, session_id, EnvelopeFactory(ids), now), None
    return store.end_abandoned(session_id, closing, ended_at=now, mapper_state=new_state)


def _close_from_envelopes(
    store: SessionStore, session_id: str, make: EnvelopeFactory, now: int
) -> list[Envelope]:
    """What closes the activity the session's own envelopes leave open: active subagents are
    stopped and the open turn ends `failed` (a turn is opened for stops outside of one)."""
    turn: str | None = None
    active: dict[str, None] = {}  # subagent ids, in start order
    seq = 0
    while page := store.raw_envelopes(session_id, after_seq=seq, limit=_PAGE):
        seq = page[-1][0]
        for _, body in page:
            envelope = orjson.loads(body)
            kind, subagent = envelope["ev"]["t"], envelope.get("subagent")
            if kind == "turn-start":
                turn = envelope["turn"]
            elif kind == "turn-end":
                turn = None
            elif kind == "start" and subagent:
                active[subagent] = None
            elif kind == "stop" and subagent:
                active.pop(subagent, None)
    out: list[Envelope] = []
    if turn is None and active:
        turn = make.new_id()
        out.append(make.agent(TurnStartEv(), turn=turn, time=now))
    if turn is not None:
        out += [make.agent(StopEv(), turn=turn, time=now, subagent=sub) for sub in active]
        out.append(make.agent(TurnEndEv(status="failed"), turn=turn, time=now))
    return out


def clean_run_dirs(run_dir: Path) -> None:
    """Remove the run directories (`<pid>-…`) of launchers that are gone."""
    try:
        entries = list(run_dir.iterdir())
    except OSError:
        return
    for entry in entries:
        pid, dash, _ = entry.name.partition("-")
        if dash and pid.isdigit() and not running(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def clean_kept_settings(settings_dir: Path, now_ms: int) -> None:
    """Remove the kept overlays (`<pid>-….json`) last written `KEPT_SETTINGS_DAYS` ago or more."""
    oldest = now_ms / 1000 - KEPT_SETTINGS_DAYS * 86400
    try:
        entries = list(settings_dir.glob("*.json"))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime <= oldest:
                entry.unlink()
