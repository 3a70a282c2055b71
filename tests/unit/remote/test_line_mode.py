"""Remote mode without a terminal: agent text is data on stdout, happy's notes go to stderr with
their escape sequences shown, not obeyed (a note can quote the model or a tool)."""

from __future__ import annotations

import os

import anyio
import pytest

from happy_launcher.protocol import EnvelopeFactory, SequentialIds, ServiceEv, TextEv
from happy_launcher.remote.launcher import _lines, _print


def test_notes_show_escapes_and_agent_text_stays_byte_exact(capsys: pytest.CaptureFixture[str]) -> None:
    make = EnvelopeFactory(SequentialIds("e"))
    _print(make.agent(ServiceEv(text="API error: \x1b]0;owned\x07 [red]x"), turn="t1", time=1))
    _print(make.agent(TextEv(text="colour \x1b[31mred"), turn="t1", time=2))
    out, err = capsys.readouterr()
    assert err == "happy: API error: ␛]0;owned␇ [red]x\n"
    assert out == "colour \x1b[31mred\n"  # stdout is the model's text, as `claude -p` prints it


@pytest.mark.anyio
async def test_stdin_lines_whole_across_reads_and_cancellable_on_a_pipe_that_never_ends() -> None:
    """The spawner's stdin never ends: SIGTERM (a cancel) must still end the read at once."""
    read, write = os.pipe()
    got: list[str] = []
    try:
        os.write(write, b"one\ntw\xc3")  # half of ö
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def collect() -> None:
                    async for line in _lines(read):
                        got.append(line)
                        if line == "twö":
                            tg.cancel_scope.cancel()  # as SIGTERM cancels the launcher

                tg.start_soon(collect)
                os.write(write, b"\xb6\n")
        assert got == ["one", "twö"]
        with anyio.move_on_after(0.2) as waited:  # nothing more comes: only a cancel ends the read
            async for line in _lines(read):
                got.append(line)
        assert waited.cancelled_caught
    finally:
        os.close(write)  # the abandoned reads end (EOF)
        os.close(read)
