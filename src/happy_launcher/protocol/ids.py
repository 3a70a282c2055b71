"""Identifiers: cuid2 envelope/turn ids, deterministic subagent ids, and the clock seam."""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from typing import Protocol

from cuid2 import is_cuid

ID_LENGTH = 24
_BASE36 = b"0123456789abcdefghijklmnopqrstuvwxyz"
# Byte -> base36 digit; the slight modulo bias costs under 0.1 bit per character.
_TO_BASE36 = bytes(_BASE36[i % 36] for i in range(256))
_TO_LETTER = bytes(_BASE36[10 + i % 26] for i in range(256))
_SUBAGENT_PREFIX = b"happy-subagent:"


class IdFactory(Protocol):
    def __call__(self) -> str: ...


class Clock(Protocol):
    def __call__(self) -> int:
        """Now, in Unix milliseconds."""
        ...


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Cuid2Ids:
    """cuid2 ids (a letter, then a hash of time, salt, counter and host fingerprint, in base36).

    The `cuid2` package computes one sha3-512 and a big-integer base36 per id (~25 µs); this keeps
    its recipe but hashes with keyed BLAKE2b and maps digest bytes straight to base36 (~1 µs), which
    matters when replaying a 100 MB transcript.
    """

    def __init__(self, entropy: bytes | None = None) -> None:
        seed = entropy if entropy is not None else os.urandom(32)
        fingerprint = f"{os.getpid()}:{os.uname().nodename}:{time.time_ns()}".encode()
        self._key = hashlib.blake2b(seed + fingerprint, digest_size=32).digest()
        self._counter = itertools.count(int.from_bytes(seed[:4], "big"))

    def __call__(self) -> str:
        n = next(self._counter)
        digest = hashlib.blake2b(n.to_bytes(16, "big"), key=self._key, digest_size=ID_LENGTH).digest()
        return (digest[:1].translate(_TO_LETTER) + digest[1:].translate(_TO_BASE36)).decode("ascii")


class SequentialIds:
    """Deterministic cuid2-shaped ids for tests: `prefix` + zero-padded counter."""

    def __init__(self, prefix: str = "id") -> None:
        if not is_cuid(prefix + "0"):
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
    digest = hashlib.sha256(_SUBAGENT_PREFIX + provider_tool_id.encode()).hexdigest()
    return "c" + digest[: ID_LENGTH - 1]


def looks_like_cuid2(value: str) -> bool:
    return is_cuid(value, min_length=2, max_length=32)
