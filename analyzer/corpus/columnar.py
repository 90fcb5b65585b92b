"""Parallel text in Parquet, read through the one Parquet reader the training sources use
(`streams.parquet_columns`). Two shapes:

- wide: a text column per language (`eng_Latn`, `rus_Cyrl`, ...), a row per unit, and
  optionally an `id` column;
- long: a row per (unit, language): a `text` column, a language column (`lang` or
  `language`) and an `id` column; every language must have the same ids, and the units follow
  the ids in the order they first appear.

Long form is also how FLORES+ ships a language (one file per language and split, with `id`,
`iso_639_3`, `iso_15924` and `text`): `read_keyed_texts` reads such a file's ids and texts.
"""

from __future__ import annotations

import math
from pathlib import Path

from .errors import CorpusError
from .files import NotJSON, parse_json, read_text
from .readers import RawCorpus, _check_header, _check_unicode, is_id_name
from .streams import StreamError, file_kind, parquet_columns

BATCH_ROWS = 65_536
LANGUAGE_COLUMNS = ("lang", "language")
TEXT_COLUMN = "text"


def read_parquet(path: Path) -> RawCorpus:
    """A parallel corpus in one Parquet file, wide or long (see the module's docstring)."""
    try:
        with parquet_columns(path) as table:
            names = list(table.kinds)
            ids = [name for name in names if is_id_name(name)]
            if len(ids) > 1:
                raise CorpusError(f"{path}: two id columns ({', '.join(ids)})")
            language = [name for name in names if name.lower() in LANGUAGE_COLUMNS]
            if language and TEXT_COLUMN in names:
                if not ids:
                    raise CorpusError(f"{path}: a long table (a {language[0]!r} and a 'text' "
                                      "column) needs an 'id' column saying which unit a row is")
                return _long(path, table, ids[0], language[0])
            return _wide(path, table, ids[0] if ids else None)
    except StreamError as error:
        raise CorpusError(str(error)) from None


def _wide(path: Path, table, id_column: str | None) -> RawCorpus:
    languages = [name for name in table.kinds if name != id_column]
    _check_header(path, languages)
    for name in languages:
        if table.kinds[name] != "text":
            raise CorpusError(f"{path}: column {name!r} holds {table.kinds[name]}, not text (a "
                              "wide table has a text column per language, and an optional id)")
    columns: dict[str, list[str]] = {name: [] for name in languages}
    unit_ids: list[str | None] = []
    wanted = languages + ([id_column] if id_column else [])
    for before, values in table.batches(wanted, BATCH_ROWS):
        for name in languages:
            for row, text in enumerate(values[name], start=before + 1):
                _check_text(path, row, name, text)
            columns[name] += values[name]
        found = values[id_column] if id_column else [None] * len(values[languages[0]])
        unit_ids += [None if value is None else str(value) for value in found]
    labels = [f"row {row}" for row in range(1, len(unit_ids) + 1)]
    return RawCorpus(columns, dict.fromkeys(languages, path.name), labels, unit_ids)


def _long(path: Path, table, id_column: str, language_column: str) -> RawCorpus:
    texts: dict[str, dict[str, str]] = {}
    order: dict[str, int] = {}  # each id, in the order it first appears
    for before, values in table.batches([id_column, language_column, TEXT_COLUMN], BATCH_ROWS):
        rows = zip(values[id_column], values[language_column], values[TEXT_COLUMN])
        for row, (unit, lang, text) in enumerate(rows, start=before + 1):
            if unit is None or not isinstance(lang, str) or not lang.strip():
                empty = id_column if unit is None else language_column
                raise CorpusError(f"{path}: row {row:,} has no {empty}")
            _check_text(path, row, lang, text)
            key = str(unit)
            order.setdefault(key, len(order))
            if key in texts.setdefault(lang, {}):
                raise CorpusError(f"{path}: row {row:,} repeats {lang} of unit {key}")
            texts[lang][key] = text
    if not texts:
        raise CorpusError(f"{path}: no rows")
    _check_header(path, list(texts))
    ids = sorted(order, key=order.__getitem__)
    for lang, found in texts.items():
        if len(found) != len(ids):
            missing = next(unit for unit in ids if unit not in found)
            raise CorpusError(f"{path}: {lang} has {len(found):,} units of {len(ids):,}; it has "
                              f"no row for unit {missing}")
    columns = {lang: [found[unit] for unit in ids] for lang, found in texts.items()}
    return RawCorpus(columns, dict.fromkeys(columns, path.name),
                     [f"unit {unit}" for unit in ids], list(ids))


def read_keyed_texts(path: Path) -> dict[int | str, str]:
    """A FLORES+ file's texts by id (`id` and `text` columns; Parquet, maybe compressed, or
    JSON Lines), in id order; CorpusError naming the file and row of what is wrong."""
    kind = file_kind(path)
    found: dict[int | str, str] = {}
    if kind.format == "parquet":
        try:
            with parquet_columns(path, kind) as table:
                for before, values in table.batches(["id", TEXT_COLUMN], BATCH_ROWS):
                    for row, (unit, text) in enumerate(zip(values["id"], values[TEXT_COLUMN]),
                                                       start=before + 1):
                        _keep(path, row, unit, text, found)
        except StreamError as error:
            raise CorpusError(str(error)) from None
    else:
        for row, line in enumerate(read_text(path).split("\n"), start=1):
            if not line.strip():
                continue
            try:
                record = parse_json(line)
            except NotJSON as error:
                raise CorpusError(f"{path}: line {row:,}: {error}") from None
            if not isinstance(record, dict):
                raise CorpusError(f"{path}: line {row:,} is not a JSON object")
            _keep(path, row, record.get("id"), record.get(TEXT_COLUMN), found)
    return dict(sorted(found.items(), key=lambda item: (str(type(item[0])), item[0])))


def _keep(path: Path, row: int, unit, text, found: dict) -> None:
    if unit is None:
        raise CorpusError(f"{path}: row {row:,} has no id")
    unit = unit_id(unit, f"{path}: row {row:,}")
    _check_text(path, row, TEXT_COLUMN, text)
    if unit in found:
        raise CorpusError(f"{path}: row {row:,} repeats id {unit}")
    found[unit] = text


def unit_id(value, where: str) -> int | str:
    """A FLORES+ row's id as a key: a whole number or a text (a whole number stored as a float,
    `3.0`, is 3); CorpusError naming `where` for anything else (a list, an object, a fraction,
    NaN, true), which no unit is named by.

    >>> unit_id(3.0, "x"), unit_id("a1", "x")
    (3, 'a1')
    >>> unit_id([1], "row 1")
    Traceback (most recent call last):
    ...
    analyzer.corpus.errors.CorpusError: row 1: its id is a list ([1]), not a whole number or a text
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int | str) and not isinstance(value, bool):
        return value
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    if isinstance(value, float):
        kind = "a fraction" if math.isfinite(value) else "not a number"
    else:
        kind = {list: "a list", tuple: "a list", dict: "an object", bool: "true or false"}.get(
            type(value), f"a {type(value).__name__}")
    raise CorpusError(f"{where}: its id is {kind} ({shown}), not a whole number or a text",
                      value=shown)


def _check_text(path: Path, row: int, column: str, text) -> None:
    if not isinstance(text, str):
        raise CorpusError(f"{path}: row {row:,}: {column} is "
                          f"{'missing (null)' if text is None else type(text).__name__}, not text")
    _check_unicode(text, f"{path}: row {row:,}: {column}")
