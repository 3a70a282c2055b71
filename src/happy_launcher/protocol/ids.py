"""Identifiers: cuid2 envelope/turn ids, deterministic subagent ids, and the clock seam."""

from __future__ import annotations

import itertools
import os
import re
import time
from typing import Protocol

ID_LENGTH = 24
_BASE36 = b"0123456789abcdefghijklmnopqrstuvwxyz"
# Byte -> base36 digit; the slight modulo bias costs under 0.1 bit per character.
_TO_BASE36 = bytes(_BASE36[i % 36] for i in range(256))
_TO_LETTER = bytes(_BASE36[10 + i % 26] for i in range(256))
_SUBAGENT_PREFIX = b"happy-subagent:"
# cuid2's own shape (the `cuid2` package's is_cuid, which tests use as the oracle): a lowercase
# letter, then lowercase base36. Checked here without importing that package on the start-up path.
_CUID2_SHAPE = re.compile(r"[a-z][0-9a-z]{1,31}")


class IdFactory(Protocol):
    def __call__(self) -> str: ...


class Clock(Protocol):
    def __call__(self) -> int:
        """Now, in Unix milliseconds."""
        ...


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Cuid2Ids:
    """cuid2-shaped ids: a letter, then 23 base36 characters, from the OS's CSPRNG (~118 bits).

    The `cuid2` package hashes time, salt, counter and a host fingerprint with sha3-512 and a
    big-integer base36 per id (~25 µs); random bytes mapped straight to base36, drawn 256 ids at
    a time, cost ~0.3 µs an id, which matters when replaying a 100 MB transcript.
    """

    def __init__(self) -> None:
        self._pool: list[str] = []

    def __call__(self) -> str:
        if not self._pool:
            self._pool = _random_ids(_POOL)
        return self._pool.pop()


_POOL = 256


def _random_ids(count: int) -> list[str]:
    raw = os.urandom(ID_LENGTH * count)
    letters = raw[::ID_LENGTH].translate(_TO_LETTER).decode("ascii")
    rest = raw.translate(_TO_BASE36).decode("ascii")
    return [letters[i] + rest[i * ID_LENGTH + 1 : (i + 1) * ID_LENGTH] for i in range(count)]


class SequentialIds:
    """Deterministic cuid2-shaped ids for tests: `prefix` + zero-padded counter."""

    def __init__(self, prefix: str = "id") -> None:
        if not looks_like_cuid2(prefix + "0"):
            raise ValueError(f"prefix {prefix!r} does not make cuid2-shaped ids")
        self._prefix = prefix
        self._counter = itertools.count(1)

    def __call__(self) -> str:
        n = next(self._counter)
        return f"{self._prefix}{n:0{ID_LENGTH - len(self._prefix)}d}"


def subagent_id(provider_tool_id: str) -> str:
    """The session id of the subagent spawned by a provider `Task`/`Agent` call.

    Deterministic, so replaying a transcript twice gives the same ids (design §1).
    """
    import hashlib  # only sessions with subagents need it (~4 ms of the mirror's start)

    digest = hashlib.sha256(_SUBAGENT_PREFIX + provider_tool_id.encode()).hexdigest()
    return "c" + digest[: ID_LENGTH - 1]


def looks_like_cuid2(value: str) -> bool:
    return _CUID2_SHAPE.fullmatch(value) is not None
