"""The WAL stays bounded while commits never pause (a transcript replayed, a long burst), with
a reader of the store running beside the writer all along."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from happy_launcher.protocol import EnvelopeFactory, SequentialIds, TextEv
from happy_launcher.store.sessions import DB_NAME, WAL_SIZE_LIMIT, SessionStore

TURN = "turn00000000000000000001"
ENVELOPE_TEXT = 60_000  # bytes of text per envelope: large, so the test commits a lot quickly
PER_COMMIT = 8
TEXT = "x" * ENVELOPE_TEXT
COMMITS = 700  # ~340 MB committed: the limit passed five times over


def test_the_wal_stays_under_its_limit_through_a_burst(tmp_path: Path) -> None:
    home = tmp_path / "home"
    factory = EnvelopeFactory(SequentialIds("env"))
    wal = home / f"{DB_NAME}-wal"
    writer = SessionStore.open(home)
    writer.create_session("s1", cwd="/w", started_at=1)
    stop = threading.Event()
    seen: list[int] = []  # every seq the reader read, in order

    def read() -> None:
        with SessionStore.open(home) as reader:
            while not stop.is_set():
                rows = reader.raw_envelopes("s1", seen[-1] if seen else 0, 200)
                seen.extend(seq for seq, _ in rows)

    thread = threading.Thread(target=read)
    thread.start()
    largest = 0
    try:
        for _ in range(COMMITS):
            batch = [factory.agent(TextEv(text=TEXT), turn=TURN, time=1) for _ in range(PER_COMMIT)]
            writer.append_envelopes("s1", batch)
            largest = max(largest, os.stat(wal).st_size)
    finally:
        stop.set()
        thread.join()
        writer.close()
    total = COMMITS * PER_COMMIT
    assert largest <= WAL_SIZE_LIMIT, f"the WAL reached {largest >> 20} MB"
    assert total * ENVELOPE_TEXT > 5 * WAL_SIZE_LIMIT  # the test means something
    assert seen == list(range(1, len(seen) + 1))  # the reader saw a gapless prefix
    assert len(seen) > 0
