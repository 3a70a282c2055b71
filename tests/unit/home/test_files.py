"""Private files in HAPPY_HOME_DIR (home/files.py), on the real filesystem."""

from __future__ import annotations

import stat
from pathlib import Path

from happy_launcher.home.files import write_private


def test_a_private_file_replaces_the_old_one_whole_and_is_only_ours(tmp_path: Path) -> None:
    path = tmp_path / "home" / "token"
    write_private(path, b"one")
    write_private(path, b"two")
    assert path.read_bytes() == b"two"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["token"]  # no temporary file left
