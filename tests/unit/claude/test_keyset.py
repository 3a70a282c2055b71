from __future__ import annotations

import tracemalloc
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from happy_launcher.claude.keyset import KeySet

# Uuids (packed) and other keys (kept aside), among them a uuid in capitals, one with spaces that
# `bytes.fromhex` would skip, and one that two neighbours packed side by side spell across their
# boundary.
POOL = [
    "0b7e3c1a-5d2f-4e6a-9b8c-1d2e3f4a5b6c",
    "0B7E3C1A-5D2F-4E6A-9B8C-1D2E3F4A5B6C",
    "0b7e3c1a-5d2f-4e6a-9b8c-1d2e3f4a5B6c",
    "11111111-1111-1111-1111-111111111111",
    "22222222-2222-2222-2222-222222222222",
    "11111111-1111-1111-2222-222222222222",  # the end of the first and the start of the second
    "0b7e3c1a-5d2f-4e6a-9b8c-1d2e3f4a  5b",
    "0b7e3c1a-5d2f-4e6a-9b8c-1d2e3f4a5b6",
    "zb7e3c1a-5d2f-4e6a-9b8c-1d2e3f4a5b6c",
    "summary:leaf:a title",
    "",
    "z" * 35,
]


@settings(max_examples=300)
@given(st.lists(st.tuples(st.sampled_from(["add", "insert", "discard"]), st.sampled_from(POOL)), max_size=40))
def test_it_behaves_as_a_set(ops: list[tuple[str, str]]) -> None:
    keys, ref = KeySet(), set[str]()
    for op, key in ops:
        if op == "insert":
            assert keys.insert(key) == (key not in ref)
            ref.add(key)
        else:
            getattr(keys, op)(key)
            getattr(ref, op)(key)
        assert all((k in keys) == (k in ref) for k in POOL)
        assert len(keys) == len(ref)
    assert set(keys) == ref


def test_many_keys_split_into_buckets_and_none_is_lost() -> None:
    added = [str(uuid.UUID(int=n * 7919 + 1)) for n in range(20_000)]
    keys = KeySet(added)
    assert len(keys._dir) > 64  # it has split many times
    assert all(key in keys for key in added)
    assert not any(str(uuid.UUID(int=n * 7919 + 2)) in keys for n in range(20_000))
    assert sorted(keys) == sorted(added)
    for key in added[::2]:
        keys.discard(key)
    assert sorted(keys) == sorted(added[1::2])


def test_a_uuid_key_costs_a_quarter_of_a_set_of_strings() -> None:
    added = [str(uuid.uuid4()) for _ in range(50_000)]
    tracemalloc.start()
    try:
        keys = KeySet(added)
        packed, _ = tracemalloc.get_traced_memory()
        del keys
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        strings = {key.encode().decode() for key in added}  # new strings, as a parse makes them
        as_set, _ = tracemalloc.get_traced_memory()
        del strings
    finally:
        tracemalloc.stop()
    assert packed < (as_set - base) / 4, (packed / len(added), (as_set - base) / len(added))
