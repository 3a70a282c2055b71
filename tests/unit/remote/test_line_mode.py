"""Remote mode without a terminal: agent text is data on stdout, happy's notes go to stderr with
their escape sequences shown, not obeyed (a note can quote the model or a tool)."""

from __future__ import annotations

import pytest

from happy_launcher.protocol import EnvelopeFactory, SequentialIds, ServiceEv, TextEv
from happy_launcher.remote.launcher import _print


def test_notes_show_escapes_and_agent_text_stays_byte_exact(capsys: pytest.CaptureFixture[str]) -> None:
    make = EnvelopeFactory(SequentialIds("e"))
    _print(make.agent(ServiceEv(text="API error: \x1b]0;owned\x07 [red]x"), turn="t1", time=1))
    _print(make.agent(TextEv(text="colour \x1b[31mred"), turn="t1", time=2))
    out, err = capsys.readouterr()
    assert err == "happy: API error: ␛]0;owned␇ [red]x\n"
    assert out == "colour \x1b[31mred\n"  # stdout is the model's text, as `claude -p` prints it
