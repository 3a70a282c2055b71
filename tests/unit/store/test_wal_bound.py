"""The WAL stays bounded while commits never pause (a transcript replayed, a long burst), with
a reader of the store running beside the writer all along."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from happy_launcher.protocol import EnvelopeFactory, SequentialIds, TextEv
from happy_launcher.store.checkpoint import WAL_SIZE_LIMIT
from happy_launcher.store.sessions import SessionStore

TURN = "turn00000000000000000001"
ENVELOPE_TEXT = 60_000  # bytes of text per envelope: large, so the test commits a lot quickly
PER_COMMIT = 8
TEXT = "x" * ENVELOPE_TEXT
COMMITS = 700  # ~340 MB committed: the limit passed five times over


def test_the_wal_stays_under_its_limit_through_a_burst(tmp_path: Path) -> None:
    home = tmp_path / "home"
    factory = EnvelopeFactory(SequentialIds("env"))
    writer = SessionStore.open(home)
    writer.create_session("s1", cwd="/w", started_at=1)
    data = writer.data_file("s1")
    assert data.parent != home  # the session's own database, not the registry
    wal = data.with_name(f"{data.name}-wal")
    stop = threading.Event()
    seen: list[list[int]] = [[], []]  # every seq each reader read, in order

    def read(mine: list[int]) -> None:
        # Two readers whose read transactions overlap: a PASSIVE checkpoint then seldom finds
        # a moment with none holding an old snapshot.
        with SessionStore.open(home) as reader:
            while not stop.is_set():
                rows = reader.raw_envelopes("s1", mine[-1] if mine else 0, 200)
                mine.extend(seq for seq, _ in rows)

    threads = [threading.Thread(target=read, args=(mine,)) for mine in seen]
    for thread in threads:
        thread.start()
    largest = 0
    try:
        for _ in range(COMMITS):
            batch = [factory.agent(TextEv(text=TEXT), turn=TURN, time=1) for _ in range(PER_COMMIT)]
            writer.append_envelopes("s1", batch)
            largest = max(largest, os.stat(wal).st_size)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        writer.close()
    total = COMMITS * PER_COMMIT
    assert largest <= WAL_SIZE_LIMIT, f"the WAL reached {largest >> 20} MB"
    assert total * ENVELOPE_TEXT > 5 * WAL_SIZE_LIMIT  # the test means something
    for mine in seen:
        assert mine == list(range(1, len(mine) + 1))  # a gapless prefix
        assert len(mine) > total // 2  # the reader kept up (and its reads overlapped the burst)
