"""Ctrl-T in the TUI is happy's key under `happy attach` (the pump's `on_ctrl_t`): taken out of
what reaches Claude and told once per read; without it, every byte reaches Claude."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import cast

import pytest

from happy_launcher.local.pty_pump import CTRL_T, ChildProcess, Inbox, Pump


@pytest.fixture
def stdin() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    os.close(read)
    os.close(write)


def pump(stdin_fd: int, told: list[str] | None) -> Pump:
    on_ctrl_t = None if told is None else (lambda: told.append("ctrl-t"))
    return Pump(cast(ChildProcess, None), Inbox(), stdin_fd, 1, None, on_ctrl_t)


@pytest.mark.parametrize("key", CTRL_T)
def test_ctrl_t_is_taken_out_and_told(stdin: tuple[int, int], key: bytes) -> None:
    told: list[str] = []
    attached = pump(stdin[0], told)
    os.write(stdin[1], b"ab" + key + b"c")
    attached._read_stdin()
    assert (bytes(attached._to_child), told) == (b"abc", ["ctrl-t"])


def test_without_the_callback_ctrl_t_is_claudes(stdin: tuple[int, int]) -> None:
    plain = pump(stdin[0], None)
    os.write(stdin[1], b"ab\x14c")
    plain._read_stdin()
    assert bytes(plain._to_child) == b"ab\x14c"


def test_other_input_is_not_told(stdin: tuple[int, int]) -> None:
    told: list[str] = []
    attached = pump(stdin[0], told)
    os.write(stdin[1], b"hello\r")
    attached._read_stdin()
    assert (bytes(attached._to_child), told) == (b"hello\r", [])
