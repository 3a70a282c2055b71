"""The README and docs/ stand on their own: every link and path they give stays inside the
repository and exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_no_link_or_path_points_outside_the_repository() -> None:
    for doc in DOCS:
        text = doc.read_text()
        assert "../" not in text, f"{doc.name}: a path outside the repository"
        for target in LINK.findall(text):
            if not target.startswith(("http://", "https://", "mailto:")):
                assert (doc.parent / target).resolve().is_relative_to(ROOT), f"{doc.name}: {target}"
                assert (doc.parent / target).exists(), f"{doc.name}: {target} does not exist"


def test_the_readme_says_happy_runs_on_linux() -> None:
    assert "happy runs on **Linux**" in (ROOT / "README.md").read_text()


# A file the docs name in code spans: a test, a script, a module (under src/happy_launcher/).
NAMED_FILE = re.compile(r"`((?:tests|scripts|src|docs)/[\w/.-]+\.\w+|[a-z_]+/[a-z_]+\.py)(?:::\w+)?`")


def test_every_file_the_docs_name_exists() -> None:
    """Moves and renames leave no stale path behind (tests, scripts, modules, docs)."""
    for doc in DOCS:
        for named in NAMED_FILE.findall(doc.read_text()):
            found = (ROOT / named).exists() or (ROOT / "src" / "happy_launcher" / named).exists()
            assert found, f"{doc.name} names {named}, which does not exist"
