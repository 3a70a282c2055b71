"""The soak test's invariants, checked once a run is over (tests/support/soak_run.py drives it).

Each check returns what it found rather than asserting, so `scripts/soak` can count lost and
duplicated messages and split sessions over many seeds, and the test can print all of them.
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from happy_launcher.store.sessions import SessionStore
from tests.support.fake_anthropic import RecordedRequest
from tests.support.happy_tui import Envelope, getpid_alive, happy_executable, wait_pid_gone

# What `happy replay` of the transcript cannot reproduce, so the comparison leaves it out:
# - `service` envelopes: happy's own notes (a continuity break, an injection that failed);
# - turn-end statuses: a turn cut short by SIGTERM/SIGHUP (`cancelled`) or kill -9 (`failed`,
#   by the next start) has no end in the transcript, and replay closes it `completed` when
#   the next prompt comes: only happy knew how it ended.
REPLAY_ROLES = ("user", "agent")


@dataclass
class Findings:
    """What one run broke. `lost`/`duplicated` name message texts; `violations` say the rest."""

    messages: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    splits: int = 0
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.splits or self.violations)


@dataclass(frozen=True)
class Exit:
    """One end of a happy process: how it was ended, its exit code, the terminal before/after."""

    how: str  # "exit", "sigterm", "kill -9"
    code: int
    stty_before: str | None
    stty_after: str | None


def user_blocks(req: RecordedRequest) -> list[str]:
    """The text blocks of a request's last user message, stripped: the prompt(s) it asks about.
    (After an interrupt Claude may send `[Request interrupted by user]` in the same message.)"""
    users = req.user_messages
    if not users:
        return []
    content = users[-1].get("content")
    if isinstance(content, str):
        return [content.strip()]
    blocks = content if isinstance(content, list) else []
    return [b["text"].strip() for b in blocks if isinstance(b, dict) and b.get("type") == "text"]


def model_counts(requests: Sequence[RecordedRequest], texts: Iterable[str]) -> Counter[str]:
    wanted = set(texts)
    return Counter(t for req in requests for t in user_blocks(req) if t in wanted)


def stored_sessions(home: Path) -> dict[str, list[tuple[int, Envelope]]]:
    """Every happy session's envelopes, (seq, envelope) in seq order, sessions by start."""
    with SessionStore.open(home) as store:
        ids = [s.id for s in reversed(store.list_sessions())]
        return {sid: [(seq, orjson.loads(body)) for seq, body in store.raw_envelopes(sid)] for sid in ids}


def sessions_of_claude_id(home: Path, claude_id: str) -> set[str]:
    """The happy sessions the store bound to a Claude session id (more than one: a split)."""
    conn = sqlite3.connect(home / "sessions.db")
    try:
        rows = conn.execute(
            "SELECT DISTINCT happy_session FROM claude_sessions WHERE claude_session_id = ?", (claude_id,)
        ).fetchall()
    finally:
        conn.close()
    return {row[0] for row in rows}


def user_text(env: Envelope) -> str | None:
    return str(env["ev"]["text"]) if env["role"] == "user" and env["ev"]["t"] == "text" else None


def check_messages(
    found: Findings, texts: Sequence[str], requests: Sequence[RecordedRequest], home: Path
) -> None:
    """Each message reached the model once, and is one `user` `text` envelope in the store."""
    seen = model_counts(requests, texts)
    in_store: Counter[str] = Counter()
    holders: dict[str, set[str]] = defaultdict(set)
    for sid, envelopes in stored_sessions(home).items():
        for _, env in envelopes:
            text = user_text(env)
            if text is not None and text in texts:
                in_store[text] += 1
                holders[text].add(sid)
    found.messages = len(texts)
    for text in texts:
        if seen[text] == 0 or in_store[text] == 0:
            found.lost.append(f"{text} (model {seen[text]}, store {in_store[text]})")
        elif seen[text] > 1 or in_store[text] > 1:
            found.duplicated.append(f"{text} (model {seen[text]}, store {in_store[text]})")
    sessions = {sid for sids in holders.values() for sid in sids}
    if len(sessions) > 1:
        found.violations.append(f"the prompts are spread over {len(sessions)} happy sessions")


def check_sessions(found: Findings, home: Path, claude_id: str) -> None:
    """One happy session for the Claude session; in each, seqs 1..N and every turn closed once."""
    bound = sessions_of_claude_id(home, claude_id)
    found.splits = max(0, len(bound) - 1)
    if found.splits:
        found.violations.append(f"Claude session {claude_id} is bound to happy sessions {sorted(bound)}")
    for sid, envelopes in stored_sessions(home).items():
        seqs = [seq for seq, _ in envelopes]
        if seqs != list(range(1, len(seqs) + 1)):
            found.violations.append(f"session {sid}: seqs not contiguous from 1: {seqs}")
        starts = Counter(e.get("turn") for _, e in envelopes if e["ev"]["t"] == "turn-start")
        ends = Counter(e.get("turn") for _, e in envelopes if e["ev"]["t"] == "turn-end")
        for turn in starts.keys() | ends.keys():
            if starts[turn] != 1 or ends[turn] != 1:
                found.violations.append(
                    f"session {sid}: turn {turn} has {starts[turn]} turn-start(s), {ends[turn]} turn-end(s)"
                )


def projection(envelopes: Iterable[Envelope]) -> list[tuple[str, str, str]]:
    """What the store and a replay must agree on: (role, kind, text), turn bounds included."""
    out = []
    for env in envelopes:
        ev: dict[str, Any] = env["ev"]
        if env["role"] in REPLAY_ROLES and ev["t"] in ("text", "turn-start", "turn-end"):
            out.append((env["role"], ev["t"], str(ev.get("text", ""))))
    return out


def replayed(transcript: Path, env: dict[str, str]) -> list[Envelope] | str:
    """`happy replay` of the transcript: its envelopes, or why it failed."""
    done = subprocess.run(
        [happy_executable(), "replay", str(transcript)], env=env, capture_output=True, timeout=60, check=False
    )
    if done.returncode != 0:
        return f"happy replay exited {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}"
    return [orjson.loads(line) for line in done.stdout.splitlines()]


def check_replay(found: Findings, home: Path, transcript: Path, env: dict[str, str]) -> None:
    """The store (its sessions in order) equals `happy replay` of the transcript, up to REPLAY_ROLES."""
    if not transcript.exists():  # no prompt reached Claude: nothing to replay (check_messages says so)
        return
    replay = replayed(transcript, env)
    if isinstance(replay, str):
        found.violations.append(replay)
        return
    live = [e for envelopes in stored_sessions(home).values() for _, e in envelopes]
    want, got = projection(replay), projection(live)
    if want != got:
        at = next(
            (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), min(len(want), len(got))
        )
        found.violations.append(
            f"store != replay from item {at} of {len(got)} / {len(want)}: "
            f"store {got[at : at + 3]}, replay {want[at : at + 3]}"
        )


def check_exits(found: Findings, exits: Sequence[Exit]) -> None:
    """Exit codes as documented; the terminal as it was after every exit happy could clean up
    after (a kill -9 leaves it raw: nothing can restore it)."""
    wanted = {"exit": 0, "sigterm": 143, "sighup": 129, "kill -9": 137}
    for n, ex in enumerate(exits):
        if ex.how not in wanted:
            found.violations.append(f"run {n + 1} ended on its own ({ex.how}), exit {ex.code}")
        elif ex.code != wanted[ex.how]:
            found.violations.append(f"run {n + 1} ({ex.how}) exited {ex.code}, not {wanted[ex.how]}")
        if ex.how != "kill -9" and ex.stty_before != ex.stty_after:
            found.violations.append(f"run {n + 1} ({ex.how}): terminal not restored")


def ours(home: Path) -> list[int]:
    """Live processes whose environment names this run's HAPPY_HOME_DIR (happy, Claude, hooks)."""
    marker = b"HAPPY_HOME_DIR=" + bytes(home) + b"\0"
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ and getpid_alive(int(proc.name)):
            pids.append(int(proc.name))
    return pids


def check_nothing_running(found: Findings, home: Path, seen: Iterable[int], timeout: float = 10) -> None:
    left = {pid for pid in (*seen, *ours(home)) if not wait_pid_gone(pid, timeout)}
    if left:
        names = [Path(f"/proc/{pid}/comm").read_text().strip() for pid in left if getpid_alive(pid)]
        found.violations.append(f"still running after the run: {sorted(left)} {names}")
