"""A lone argument to `happy` that is a verb mistyped (`happy sesions`) is said so, instead of
going to Claude as a prompt: a paid request for a typo. Stdlib only: `happy claude` loads it."""

from __future__ import annotations

from collections.abc import Iterable

# Two edits for the longer verbs; one for verbs of four letters or fewer, where two would take
# ordinary words for them (`hello` is two edits from `help`, `yes` from `web`).
SHORT_VERB = 4


def mistyped_verb(word: str, verbs: Iterable[str]) -> str | None:
    """The verb `word` is a typo of (the nearest; None if none is near enough, or it is one)."""
    near = [
        (distance, verb)
        for verb in verbs
        if (distance := edits(word.lower(), verb)) <= (1 if len(verb) <= SHORT_VERB else 2)
    ]
    best = min(near, default=None)
    return None if best is None or best[0] == 0 else best[1]


def edits(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of two neighbours that turn `a` into `b`
    (optimal string alignment distance)."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, rows[-2][j - 2] + 1)
            row.append(cost)
        rows.append(row)
    return rows[-1][-1]
