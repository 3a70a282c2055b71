"""docs/control-protocol.md carries the JSON Schema of every line, exactly as the models make it."""

from __future__ import annotations

from happy_launcher.control.framing import schemas
from scripts.gen_control_doc import DOC, MARK, updated


def test_the_doc_has_every_schema_as_the_models_make_it() -> None:
    text = DOC.read_text()
    assert MARK in text
    assert text == updated(text), "run .venv/bin/python scripts/gen_control_doc.py"
    for name in schemas():
        assert f"`{name}`" in text.split(MARK)[0], f"{name} is not described in the doc"
