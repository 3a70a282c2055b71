"""A compact set of record dedupe keys, for the keys a session holds for its whole run.

The reader keeps the key of every record it has read and the mirror of every record it has
mapped: with a `set` of strings a uuid key costs ~160 bytes (its string, shared by both sets,
and a slot in each), so a 100 MB history held ~18 MB of keys. Claude's keys are nearly all
uuids in canonical text (36 lowercase characters), which 16 bytes hold exactly: those are kept
packed in byte buckets (~25 bytes a key), any other key as it is in a plain set.

The buckets are an extendible hash table (a bucket that fills up splits in two by one more bit
of its keys' hashes, the directory doubling when needed): no rehash of the whole set, so no
pause grows with it, and a lookup scans about 512 bytes at most.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, MutableSet

_SIZE = 16  # bytes of a packed key: a uuid
_SPLIT = 32 * _SIZE  # a bucket this full splits


class _Bucket:
    __slots__ = ("data", "depth")

    def __init__(self, depth: int) -> None:
        self.depth = depth  # the bucket's keys share the low `depth` bits of their hashes
        self.data = bytearray()  # its keys, _SIZE bytes each


class KeySet(MutableSet[str]):
    """A set of strings, compact for uuids."""

    __slots__ = ("_depth", "_dir", "_other", "_packed")

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._dir = [_Bucket(0)]  # indexed by the low `_depth` bits of a packed key's hash
        self._depth = 0
        self._other: set[str] = set()  # any key that is not a uuid in canonical text
        self._packed = 0
        for key in keys:
            self.add(key)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or (packed := _pack(key)) is None:
            return key in self._other
        data = self._dir[hash(packed) & ((1 << self._depth) - 1)].data
        at = data.find(packed)
        return at >= 0 and (at % _SIZE == 0 or _find(data, packed) >= 0)

    def add(self, key: str) -> None:
        self.insert(key)

    def insert(self, key: str) -> bool:
        """Add `key`; False if it was there already (one lookup for both)."""
        if (packed := _pack(key)) is None:
            size = len(self._other)
            self._other.add(key)
            return len(self._other) > size
        key_hash = hash(packed)
        bucket = self._dir[key_hash & ((1 << self._depth) - 1)]
        data = bucket.data
        at = data.find(packed)
        if at >= 0 and (at % _SIZE == 0 or _find(data, packed) >= 0):
            return False
        data += packed
        self._packed += 1
        if len(data) >= _SPLIT:
            self._split(bucket, key_hash)
        return True

    def discard(self, key: str) -> None:
        if (packed := _pack(key)) is None:
            self._other.discard(key)
            return
        data = self._dir[hash(packed) & ((1 << self._depth) - 1)].data
        if (at := _find(data, packed)) >= 0:
            del data[at : at + _SIZE]
            self._packed -= 1

    def __len__(self) -> int:
        return self._packed + len(self._other)

    def __iter__(self) -> Iterator[str]:
        yield from self._other
        seen: set[int] = set()  # a bucket is in the directory as often as its depth leaves bits free
        for bucket in self._dir:
            if id(bucket) not in seen:
                seen.add(id(bucket))
                data = bytes(bucket.data)
                for at in range(0, len(data), _SIZE):
                    yield str(uuid.UUID(bytes=data[at : at + _SIZE]))

    def _split(self, bucket: _Bucket, key_hash: int) -> None:
        if bucket.depth == self._depth:
            if len(self._dir) > self._packed:
                return  # its keys' hashes agree in every bit so far: let it grow instead
            self._dir += self._dir
            self._depth += 1
        bit = 1 << bucket.depth
        low, high = _Bucket(bucket.depth + 1), _Bucket(bucket.depth + 1)
        data = bytes(bucket.data)
        for at in range(0, len(data), _SIZE):
            packed = data[at : at + _SIZE]
            (high if hash(packed) & bit else low).data += packed
        for index in range(key_hash & (bit - 1), len(self._dir), bit):
            self._dir[index] = high if index & bit else low


def _pack(key: str) -> bytes | None:
    """A uuid's 16 bytes, if `key` is one in canonical text (its only text for those bytes)."""
    if len(key) != 36 or not key[8] == key[13] == key[18] == key[23] == "-":
        return None
    digits = key.replace("-", "")
    if not (digits.islower() or digits.isdigit()):  # capitals: another text of the same bytes
        return None
    try:
        packed = bytes.fromhex(digits)
    except ValueError:
        return None
    return packed if len(packed) == 16 else None  # spaces, which fromhex skips, leave fewer


def _find(data: bytearray, packed: bytes) -> int:
    """The offset of `packed` among the keys in `data`, or -1 (a match across two keys is not one)."""
    at = data.find(packed)
    while at > 0 and at % _SIZE:
        at = data.find(packed, at + 1)
    return at
