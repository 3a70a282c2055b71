"""Where the app may start sessions: resolved links and `..`, creation only when asked and only
under an allowed parent; the settings kept in HAPPY_HOME_DIR."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from happy_launcher.errors import DaemonError
from happy_launcher.spawn.dirs import (
    SETTINGS_FILE,
    Place,
    SpawnRefused,
    SpawnSettings,
    configure,
    place_for,
    read_settings,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "allowed" / "project").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "allowed" / "out").symlink_to(tmp_path / "outside")
    (tmp_path / "allowed" / "in").symlink_to(tmp_path / "allowed" / "project")
    return tmp_path


def test_a_directory_under_an_allowed_one_is_ready(tree: Path) -> None:
    allowed = [tree / "allowed"]
    assert place_for(str(tree / "allowed" / "project"), allowed, create=False) == Place(
        tree / "allowed" / "project", "ready"
    )
    assert place_for(str(tree / "allowed"), allowed, create=False).kind == "ready"
    assert place_for(str(tree / "allowed" / "in"), allowed, create=False).path == tree / "allowed" / "project"


@pytest.mark.parametrize(
    "requested",
    ["outside", "allowed/out", "allowed/../outside", "allowed/project/../../outside", "allowed/out/new"],
)
def test_outside_after_links_and_dotdot_is_refused(tree: Path, requested: str) -> None:
    with pytest.raises(SpawnRefused, match=r"not allowed: .* is outside the directories allowed here"):
        place_for(str(tree / requested), [tree / "allowed"], create=True)
    assert not (tree / "outside" / "new").exists()


def test_an_allowed_directory_given_through_a_link_is_resolved(tree: Path) -> None:
    assert place_for(str(tree / "outside"), [tree / "allowed" / "out"], create=False).kind == "ready"


def test_a_new_directory_is_asked_for_then_made_when_the_request_allows_it(tree: Path) -> None:
    new = tree / "allowed" / "new"
    assert place_for(str(new), [tree / "allowed"], create=False) == Place(new, "ask")
    assert not new.exists()
    assert place_for(str(new), [tree / "allowed"], create=True) == Place(new, "ready")
    assert new.is_dir()


def test_only_one_level_is_made_and_never_outside(tree: Path) -> None:
    with pytest.raises(SpawnRefused, match=r"no such directory: .* \(nor its parent\)"):
        place_for(str(tree / "allowed" / "a" / "b"), [tree / "allowed"], create=True)
    with pytest.raises(SpawnRefused, match="not allowed"):
        place_for(str(tree / "new"), [tree / "allowed"], create=True)  # its parent is above the allowed one
    assert not (tree / "new").exists() and not (tree / "allowed" / "a").exists()


def test_relative_paths_and_files_are_refused(tree: Path) -> None:
    (tree / "allowed" / "file").write_text("")
    with pytest.raises(SpawnRefused, match="not an absolute path"):
        place_for("allowed/project", [tree / "allowed"], create=False)
    with pytest.raises(SpawnRefused, match="not a directory"):
        place_for(str(tree / "allowed" / "file"), [tree / "allowed"], create=False)


def test_settings_default_to_the_home_directory_and_eight(tmp_path: Path) -> None:
    assert read_settings(tmp_path, Path("/home/u")) == SpawnSettings((Path("/home/u"),), 8)


def test_configure_keeps_what_is_not_given_in_a_private_file(tree: Path) -> None:
    home = tree / "happy"
    home.mkdir()
    configure(home, tree, [str(tree / "allowed" / "in")], None)
    configure(home, tree, [], 3)
    assert read_settings(home, tree) == SpawnSettings((tree / "allowed" / "project",), 3)
    assert stat.S_IMODE((home / SETTINGS_FILE).stat().st_mode) == 0o600
    with pytest.raises(DaemonError, match="--allow-dir: no such directory"):
        configure(home, tree, [str(tree / "nowhere")], None)
    with pytest.raises(DaemonError, match="--max-sessions must be at least 1"):
        configure(home, tree, [], 0)
    assert read_settings(home, tree).limit == 3
