"""bench_scale's fake Claude: golden transcript lines (ids renamed per session and copy)
appended to every session's transcript on schedule, each append's time kept by uuid."""

from __future__ import annotations

import random
import re
import time
from multiprocessing.synchronize import Event
from pathlib import Path

import orjson

from scripts.bench.corpus import GOLDEN

_IDS = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|toolu_[A-Za-z0-9]+")
_SETTLE = 0.5  # s between the mirrors' readiness and the first append


def golden_lines() -> list[bytes]:
    """The golden main-file lines that carry a uuid (every one of them is measured)."""
    lines = []
    for path in sorted(GOLDEN.glob("*/*.jsonl")):
        for line in path.read_bytes().splitlines():
            if line.strip() and isinstance(orjson.loads(line).get("uuid"), str):
                lines.append(line)
    return lines


def session_lines(golden: list[bytes], session: int, count: int) -> list[tuple[str, bytes]]:
    """(uuid, line) x count for one session: golden lines, ids renamed per session and copy."""
    out: list[tuple[str, bytes]] = []
    copy = 0
    while len(out) < count:
        suffix = b"%04x%04x" % (session, copy)
        copy += 1
        for line in golden[: count - len(out)]:
            renamed = _IDS.sub(lambda m: m.group(0)[: -len(suffix)] + suffix, line)  # noqa: B023 (used at once)
            out.append((orjson.loads(renamed)["uuid"], renamed))
    return out


def fake_claude(
    plans: list[tuple[Path, list[tuple[str, bytes]]]],
    rate: float,
    phases: str,
    window: float,
    start: Event,
    out: Path,
    batch: int = 1,
) -> None:
    """Append every session's lines on schedule, `batch` lines per write (Claude flushes
    several records at once; one per write is the worst case), `rate` lines a second; the
    time each append landed, by uuid."""
    period = batch / rate
    rng = random.Random(20)
    files = [path.open("ab", buffering=0) for path, _ in plans]
    fixed = [rng.uniform(0, period) for _ in plans]
    events = []
    for i, (_, lines) in enumerate(plans):
        for k in range(0, len(lines), batch):
            offset = fixed[i] if phases == "random" else rng.uniform(0, window)
            events.append((k // batch * period + offset, i, lines[k : k + batch]))
    events.sort(key=lambda e: e[0])
    stamps: dict[str, int] = {}
    start.wait()
    t0 = time.monotonic() + _SETTLE
    for at, i, group in events:
        delay = t0 + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # the writer's pace, not synchronisation
        files[i].write(b"".join(line + b"\n" for _, line in group))
        landed = time.time_ns()
        stamps.update((uuid, landed) for uuid, _ in group)
    for f in files:
        f.close()
    out.write_bytes(orjson.dumps(stamps))
