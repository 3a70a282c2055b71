"""`happy claude`: placeholder until local mode lands."""

from __future__ import annotations

from collections.abc import Sequence


def run(argv: Sequence[str]) -> int:
    raise SystemExit("happy claude: not implemented yet")
