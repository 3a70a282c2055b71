"""Remote mode without a terminal: agent text is data on stdout, happy's notes go to stderr with
their escape sequences shown, not obeyed (a note can quote the model or a tool); stdin's lines
from a pipe that never ends (a spawned session's) stop at once when happy is ended."""

from __future__ import annotations

import os

import anyio
import pytest

from happy_launcher.protocol import EnvelopeFactory, SequentialIds, ServiceEv, TextEv
from happy_launcher.remote.launcher import _print, _stdin_lines


def test_notes_show_escapes_and_agent_text_stays_byte_exact(capsys: pytest.CaptureFixture[str]) -> None:
    make = EnvelopeFactory(SequentialIds("e"))
    _print(make.agent(ServiceEv(text="API error: \x1b]0;owned\x07 [red]x"), turn="t1", time=1))
    _print(make.agent(TextEv(text="colour \x1b[31mred"), turn="t1", time=2))
    out, err = capsys.readouterr()
    assert err == "happy: API error: ␛]0;owned␇ [red]x\n"
    assert out == "colour \x1b[31mred\n"  # stdout is the model's text, as `claude -p` prints it


@pytest.mark.anyio
async def test_a_pipe_that_never_ends_is_read_by_lines_and_the_wait_ends_when_cancelled() -> None:
    read, write = os.pipe()
    got: list[str] = []
    two = anyio.Event()

    async def lines() -> None:
        async for line in _stdin_lines(read):
            got.append(line)
            if len(got) == 2:
                two.set()

    try:
        os.write(write, "one\ntwo ü\nthr".encode())
        with anyio.fail_after(5):  # a worker thread blocked in read() would hold the cancel forever
            async with anyio.create_task_group() as tg:
                tg.start_soon(lines)
                await two.wait()
                await anyio.wait_all_tasks_blocked()  # waiting for more
                tg.cancel_scope.cancel()
        assert got == ["one", "two ü"]
        os.write(write, b"ee\n\nlast")
        os.close(write)
        with anyio.fail_after(5):
            await lines()  # the rest, then the pipe's end
        assert got == ["one", "two ü", "ee", "", "last"]
    finally:
        os.close(read)
