"""FLORES-200 as its release ships it: `dev/<lang>.dev` and `devtest/<lang>.devtest`, a sentence
per line, line i of every language the same sentence (the archive's layout, and that of the
repositories that copy it, such as AleksandarPetrov/tokenization-fairness).

A corpus is one split or both (`dev+devtest`: dev's sentences, then devtest's); each unit keeps
its FLORES id, its split and its line number, as `dev:1` ... `devtest:1012`.

>>> FLORES_SPLITS
('dev', 'devtest', 'dev+devtest')
"""

from __future__ import annotations

from pathlib import Path

from analyzer.errors import SETTING

from .errors import CorpusError
from .files import read_text
from .readers import RawCorpus, check_same_length, split_lines

FLORES_SPLITS = ("dev", "devtest", "dev+devtest")
DEFAULT_SPLIT = "devtest"
"""What FLORES-200's users measure on (dev is for tuning)."""


def flores_files(folder: Path) -> dict[str, dict[str, Path]]:
    """`{split: {lang: file}}` of the splits present: `<split>/<lang>.<split>` files."""
    found: dict[str, dict[str, Path]] = {}
    for split in ("dev", "devtest"):
        sub = folder / split
        files = sorted(sub.glob(f"*.{split}")) if sub.is_dir() else []
        if files:
            found[split] = {path.name[:-len(split) - 1]: path for path in files if path.is_file()}
    return found


def read_flores(folder: Path, split: str = DEFAULT_SPLIT) -> RawCorpus:
    """The split's sentences in every language, aligned; CorpusError naming what is missing or
    misaligned."""
    if split not in FLORES_SPLITS:
        raise CorpusError(f"{SETTING} must be one of {', '.join(FLORES_SPLITS)}, not {split!r}",
                          setting="split", value=split)
    found = flores_files(folder)
    parts = split.split("+")
    for part in parts:
        if part not in found:
            present = ", ".join(found) or "none"
            raise CorpusError(f"{folder}: no {part}/<lang>.{part} files (the FLORES-200 layout); "
                              f"the splits here: {present}", setting="split", value=split)
    languages = sorted(found[parts[0]])
    for part in parts[1:]:
        differ = sorted(set(languages) ^ set(found[part]))
        if differ:
            raise CorpusError(f"{folder}: dev and devtest have different languages ({', '.join(differ)} "
                              "in only one)")
    columns: dict[str, list[str]] = {lang: [] for lang in languages}
    labels: list[str] = []
    unit_ids: list[str | None] = []
    for part in parts:
        texts = {lang: split_lines(read_text(found[part][lang])) for lang in languages}
        check_same_length(texts, {lang: f"{part}/{found[part][lang].name}" for lang in languages},
                          "lines")
        for lang in languages:
            columns[lang] += texts[lang]
        count = len(texts[languages[0]]) if languages else 0
        labels += [f"{part}/<lang>.{part} line {i + 1}" for i in range(count)]
        unit_ids += [f"{part}:{i + 1}" for i in range(count)]
    origin = {lang: " and ".join(f"{part}/{found[part][lang].name}" for part in parts)
              for lang in languages}
    return RawCorpus(columns, origin, labels, unit_ids)
