"""FLORES-200 as its release ships it: `dev/<lang>.dev` and `devtest/<lang>.devtest`, a sentence
per line, line i of every language the same sentence (the archive's layout, and that of the
repositories that copy it, such as AleksandarPetrov/tokenization-fairness).

FLORES+ (the Open Language Data Initiative's continuation, `openlanguagedata/flores_plus` on
the Hugging Face hub) ships a file per language and split, `dev/<lang>.parquet` (later
`.jsonl`), a row per sentence with its `id`, `iso_639_3`, `iso_15924`, `glottocode` and `text`;
its sentences are aligned by id, not by place.

A corpus is one split or both (`dev+devtest`: dev's sentences, then devtest's); each unit keeps
its split and its FLORES id (FLORES-200: its line number; FLORES+: its `id`), as `dev:1` ...
`devtest:1012`.

>>> FLORES_SPLITS
('dev', 'devtest', 'dev+devtest')
"""

from __future__ import annotations

from pathlib import Path

from analyzer.errors import SETTING

from .choices import DEFAULT_SPLIT, FLORES_SPLITS
from .columnar import read_keyed_texts
from .errors import CorpusError
from .files import read_text
from .readers import RawCorpus, check_same_length, split_lines

PLUS_SUFFIXES = (".parquet", ".jsonl")
"""FLORES+'s files: `<split>/<lang>.parquet` (its releases up to 2.1), `.jsonl` (later)."""


def flores_files(folder: Path) -> dict[str, dict[str, Path]]:
    """`{split: {lang: file}}` of the splits present: `<split>/<lang>.<split>` files."""
    found: dict[str, dict[str, Path]] = {}
    for split in ("dev", "devtest"):
        sub = folder / split
        files = sorted(sub.glob(f"*.{split}")) if sub.is_dir() else []
        if files:
            found[split] = {path.name[:-len(split) - 1]: path for path in files if path.is_file()}
    return found


def flores_plus_files(folder: Path) -> dict[str, dict[str, Path]]:
    """`{split: {lang: file}}` of FLORES+'s layout: `<split>/<lang>.parquet` (or `.jsonl`)."""
    found: dict[str, dict[str, Path]] = {}
    for split in ("dev", "devtest"):
        sub = folder / split
        files = sorted(path for path in sub.iterdir() if path.suffix in PLUS_SUFFIXES
                       and path.is_file()) if sub.is_dir() else []
        if files:
            found[split] = {path.stem: path for path in files}
    return found


def read_flores(folder: Path, split: str = DEFAULT_SPLIT, plus: bool = False) -> RawCorpus:
    """The split's sentences in every language, aligned: FLORES-200's layout (line i of every
    language), or FLORES+'s (`plus`: the rows of every language with the same id); CorpusError
    naming what is missing or misaligned."""
    if split not in FLORES_SPLITS:
        raise CorpusError(f"{SETTING} must be one of {', '.join(FLORES_SPLITS)}, not {split!r}",
                          setting="split", value=split)
    found = flores_plus_files(folder) if plus else flores_files(folder)
    parts = split.split("+")
    for part in parts:
        if part not in found:
            present = ", ".join(found) or "none"
            layout = (f"{part}/<lang>.parquet files (the FLORES+ layout)" if plus
                      else f"{part}/<lang>.{part} files (the FLORES-200 layout)")
            raise CorpusError(f"{folder}: no {layout}; the splits here: {present}",
                              setting="split", value=split)
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
        if plus:
            texts, ids = _by_id(folder, part, found[part], languages)
            labels += [f"{part} id {unit}" for unit in ids]
        else:
            texts = {lang: split_lines(read_text(found[part][lang])) for lang in languages}
            check_same_length(texts, {lang: f"{part}/{found[part][lang].name}"
                                      for lang in languages}, "lines")
            ids = list(range(1, len(texts[languages[0]]) + 1)) if languages else []
            labels += [f"{part}/<lang>.{part} line {unit}" for unit in ids]
        for lang in languages:
            columns[lang] += texts[lang]
        unit_ids += [f"{part}:{unit}" for unit in ids]
    origin = {lang: " and ".join(f"{part}/{found[part][lang].name}" for part in parts)
              for lang in languages}
    return RawCorpus(columns, origin, labels, unit_ids, notes=_other_split_only(found, parts))


def _other_split_only(found: dict[str, dict[str, Path]], parts: list[str]) -> list[str]:
    """Notes naming the languages of a split not read that the split read lacks (a release's
    dev/ may hold a language its devtest/ does not): they are not in the corpus.

    >>> _other_split_only({"dev": {"eng": Path(), "xyz": Path()}, "devtest": {"eng": Path()}},
    ...                   ["devtest"])
    ['1 language is in dev/ only, so not in this corpus of devtest: xyz (--split dev reads it)']
    """
    notes = []
    for other in sorted(set(found) - set(parts)):
        only = sorted(set(found[other]) - set(found[parts[0]]))
        if only:
            shown = ", ".join(only[:20]) + (f", and {len(only) - 20} more" if len(only) > 20 else "")
            many = "languages are" if len(only) > 1 else "language is"
            notes.append(f"{len(only)} {many} in {other}/ only, so not in this corpus of "
                         f"{'+'.join(parts)}: {shown} (--split {other} reads "
                         f"{'them' if len(only) > 1 else 'it'})")
    return notes


def _by_id(folder: Path, part: str, files: dict[str, Path], languages: list[str]
           ) -> tuple[dict[str, list[str]], list]:
    """FLORES+: each language's texts of one split in id order, and the ids (every language
    must have the same)."""
    keyed = {lang: read_keyed_texts(files[lang]) for lang in languages}
    ids = list(keyed[languages[0]]) if languages else []
    for lang in languages[1:]:
        if list(keyed[lang]) != ids:
            missing = sorted(set(ids) ^ set(keyed[lang]), key=str)[:3]
            raise CorpusError(f"{folder}: {part}/{files[lang].name} and "
                              f"{part}/{files[languages[0]].name} have different ids (e.g. "
                              f"{', '.join(map(str, missing))} in only one)")
    return {lang: list(found.values()) for lang, found in keyed.items()}, ids
