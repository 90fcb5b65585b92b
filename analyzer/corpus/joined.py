"""A language's units joined into one text, as Petrov et al. (2023) count FLORES-200.

Their `compute_tokenizations.py` reads each split's file (a sentence per line, each line ended
by a newline), splits every file's text at newlines, puts the pieces of all files in one list
and joins it with single spaces. A file's last newline leaves an empty piece at its end, so each
unit is followed by a space, and the files (dev, then devtest) are separated by one more:

    dev "a\\nb\\n", devtest "c\\n"  ->  ["a", "b", "", "c", ""]  ->  "a b  c "

The published counts depend on those spaces (a tokenizer may count the double space apart), so
`--count joined` joins exactly so: a unit's group is its split (the part of its FLORES id before
the colon, `devtest:17`); a corpus without splits is one group.

>>> join_units(["a", "b", "c"], ["dev:1", "dev:2", "devtest:1"])
'a b  c '
>>> join_units(["a", "b"], [None, None])
'a b '
"""

from __future__ import annotations

from collections.abc import Sequence


def split_of(unit_id: str | None) -> str | None:
    """The split a unit's id names (`devtest:17` -> `devtest`); None for an id without one.

    >>> split_of("devtest:17"), split_of("17"), split_of(None)
    ('devtest', None, None)
    """
    if unit_id is None or ":" not in unit_id:
        return None
    return unit_id.split(":", 1)[0]


def added_spaces(unit_ids: Sequence[str | None]) -> int:
    """The spaces `join_units` adds to the units' own text: one after each unit, and one
    between splits.

    >>> ids = ["dev:1", "dev:2", "devtest:1"]
    >>> added_spaces(ids), len(join_units(["a", "b", "c"], ids)) - 3
    (4, 4)
    """
    splits = sum(1 for i, unit_id in enumerate(unit_ids)
                 if i == 0 or split_of(unit_id) != split_of(unit_ids[i - 1]))
    return len(unit_ids) + splits - 1 if unit_ids else 0


def join_units(texts: Sequence[str], unit_ids: Sequence[str | None]) -> str:
    """The units (in their order) joined as Petrov et al. join a FLORES language's files: each
    split's units each followed by a space, the splits separated by one more space."""
    if len(texts) != len(unit_ids):
        raise ValueError(f"{len(texts)} texts but {len(unit_ids)} unit ids")
    groups: list[list[str]] = []
    previous: object = object()
    for text, unit_id in zip(texts, unit_ids):
        split = split_of(unit_id)
        if not groups or split != previous:
            groups.append([])
            previous = split
        groups[-1].append(text)
    # Each file is its lines ended by newlines, split at newlines: its units and an empty piece.
    return " ".join(piece for group in groups for piece in [*group, ""])
