"""Fixtures shared by the local engine's in-process tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from happy_launcher.session.launcher import Run


@pytest.fixture
async def ref(tmp_path: Path) -> AsyncIterator[Run]:
    ref = Run(tmp_path / "home", tmp_path)
    ref.get().set_claude_session("c-1", "startup", None)
    yield ref
    ref.end("completed")
