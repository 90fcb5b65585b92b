"""One reader per format. Each returns a `RawCorpus`: aligned columns under the codes as given.

Readers check what only they can see (cell counts, missing languages in a TMX unit, line
counts across files); `parallel.build` then does what every format shares (language codes,
empty units, NFC, hashing).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CorpusError
from .files import NotJSON, lone_surrogate, parse_json, read_text

COMPANION_FILES = {"readme", "license", "licence", "source", "notes", "copying"}
"""Stems of .txt files in a corpus folder that are documentation, not a language."""


@dataclass
class RawCorpus:
    """Aligned texts as read: `columns[code][i]` is unit i in the language written `code`."""

    columns: dict[str, list[str]]
    origin: dict[str, str]
    """Where each column came from (a file name), for messages."""
    unit_labels: list[str]
    """How a person finds unit i in the input: 'line 3', 'row 4', 'tu 2 (tuid 17)'."""
    unit_ids: list[str | None] = field(default_factory=list)
    not_read: list[str] = field(default_factory=list)
    """Files beside the corpus's that were not read (a folder's other files), for the user."""
    notes: list[str] = field(default_factory=list)
    """What else the user should know of what was read or left (FLORES's languages of the other
    split only, say)."""


def language_files(folder: Path) -> list[Path]:
    """A folder corpus's `<lang>.txt` files (the ending in any case: `.TXT` too), without the
    documentation beside them (README.txt, LICENSE.txt, ...)."""
    return sorted(p for p in folder.iterdir() if p.suffix.lower() == ".txt" and p.is_file()
                  and p.stem.lower() not in COMPANION_FILES)


def read_folder(folder: Path, units: str = "lines") -> RawCorpus:
    """`<lang>.txt` files, line i (or paragraph i) aligned across files."""
    files = language_files(folder)
    for named in sorted(folder.iterdir()):  # a folder called eng_Latn.txt is no language's text
        if named.suffix.lower() == ".txt" and named.is_dir():
            raise CorpusError(f"{named} is a folder, not a file of text; a corpus folder holds "
                              "a <language>.txt file per language", file=str(named))
    if not files:
        raise CorpusError(f"{folder}: no <language>.txt files here (e.g. eng_Latn.txt, rus_Cyrl.txt)")
    columns: dict[str, list[str]] = {}
    origin: dict[str, str] = {}
    for path in files:
        text = read_text(path)
        columns[path.stem] = split_paragraphs(text) if units == "paragraphs" else split_lines(text)
        origin[path.stem] = path.name
    unit_word = "paragraph" if units == "paragraphs" else "line"
    check_same_length(columns, origin, f"{unit_word}s")
    count = len(next(iter(columns.values())))
    labels = [f"{unit_word} {i + 1}" for i in range(count)]
    read = set(files)
    not_read = sorted(p.name for p in folder.iterdir() if p.is_file() and p not in read
                      and not p.name.startswith(".") and p.stem.lower() not in COMPANION_FILES)
    return RawCorpus(columns, origin, labels, not_read=not_read)


def read_moses(files: list[Path]) -> RawCorpus:
    """OPUS-style `name.L1`, `name.L2`, ...: one file per language, line-aligned."""
    columns, origin = {}, {}
    for path in sorted(files):
        code = path.suffix.lstrip(".")
        columns[code] = split_lines(read_text(path))
        origin[code] = path.name
    if len(columns) < 2:
        raise CorpusError(f"{files[0]}: a Moses corpus needs two or more files name.<lang>")
    check_same_length(columns, origin, "lines")
    count = len(next(iter(columns.values())))
    return RawCorpus(columns, origin, [f"line {i + 1}" for i in range(count)])


def read_table(path: Path, delimiter: str = ",") -> RawCorpus:
    """TSV (`delimiter` a tab) or CSV: a header of language codes (and optionally `id`), one
    unit per row. The format says which, never the file's name.

    The csv module reads the text itself (not pre-split lines), so a quoted CSV cell may hold
    line breaks, which it keeps, and a TSV cell may hold any character but tab and newline.
    A quote that is never closed is refused with the line where it opened.
    """
    text = read_text(path)
    # A long paragraph is a unit, not an error. The limit is the csv module's, for the whole
    # process: raised for this read only, then put back.
    limit = csv.field_size_limit(len(text) + 1)
    try:
        return _read_rows(path, text, delimiter)
    finally:
        csv.field_size_limit(limit)


def _read_rows(path: Path, text: str, delimiter: str) -> RawCorpus:
    if delimiter == "\t":
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE,
                            strict=True)
    else:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = _table_rows(path, reader)
    try:
        header_line, header = next(rows)
    except StopIteration:
        raise CorpusError(f"{path}: empty file (expected a header row of language codes)") from None
    names = [name.strip() for name in header]
    ids = [i for i, name in enumerate(names) if is_id_name(name)]
    if len(ids) > 1:
        raise CorpusError(f"{path}: the header has two id columns ({', '.join(names[i] for i in ids)})")
    id_column = ids[0] if ids else None
    languages = [(i, name) for i, name in enumerate(names) if i != id_column]
    _check_header(path, [name for _, name in languages])
    columns: dict[str, list[str]] = {name: [] for _, name in languages}
    labels, unit_ids = [], []
    for line, row in rows:
        if not any(cell.strip() for cell in row):
            continue  # a blank line between rows
        if len(row) != len(names):
            raise CorpusError(f"{path}: row at line {line} has {len(row)} cells, "
                              f"the header has {len(names)}")
        for i, name in languages:
            columns[name].append(row[i])
        unit_ids.append(row[id_column] if id_column is not None else None)
        labels.append(f"row at line {line}")
    return RawCorpus(columns, {name: path.name for _, name in languages}, labels, unit_ids)


def _table_rows(path: Path, reader) -> Iterator[tuple[int, list[str]]]:
    """(line where the row starts, cells) for each row; csv errors named by line."""
    line = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            if "unexpected end of data" in str(error):
                raise CorpusError(f"{path}: line {line}: a quoted cell opened in this row is "
                                  "never closed") from None
            raise CorpusError(f"{path}: line {reader.line_num}: {error}") from None
        yield line, row
        line = reader.line_num + 1


ID_COLUMN = "id"
"""The unit id's column (TSV/CSV header) or key (JSONL), in any case (`id`, `ID`, `Id`): one
rule for every format, so `ID` is never read as a language code (it is Indonesian's)."""


def is_id_name(name: str) -> bool:
    return name.strip().lower() == ID_COLUMN


def read_jsonl(path: Path) -> RawCorpus:
    """One JSON object per line: `{"eng_Latn": "...", "rus_Cyrl": "..."}`, optional `id`.

    A key given twice in one object is refused (JSON parsers keep the last one silently)."""
    columns: dict[str, list[str]] = {}
    labels, unit_ids = [], []
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            record = parse_json(line, object_pairs_hook=_refuse_repeated_keys(where))
        except NotJSON as error:
            raise CorpusError(f"{where}: {error} (expected an object of language: text)"
                              ) from None
        if not isinstance(record, dict):
            raise CorpusError(f"{where}: expected an object of language: text")
        ids = [key for key in record if is_id_name(key)]
        if len(ids) > 1:
            raise CorpusError(f"{where}: two unit ids ({', '.join(map(repr, ids))}); give one")
        unit_id = record.pop(ids[0]) if ids else None
        if not record:
            raise CorpusError(f"{where}: no language texts (expected an object of language: "
                              'text, e.g. {"eng_Latn": "...", "rus_Cyrl": "..."})')
        if not columns:
            columns = {code: [] for code in record}
        if set(record) != set(columns):
            missing = sorted(set(columns) - set(record))
            extra = sorted(set(record) - set(columns))
            raise CorpusError(f"{where}: languages differ from the first line"
                              + (f"; missing {', '.join(missing)}" if missing else "")
                              + (f"; unexpected {', '.join(extra)}" if extra else ""))
        for code, text in record.items():
            if not isinstance(text, str):
                raise CorpusError(f"{where}: {code} is {type(text).__name__}, not text")
            _check_unicode(text, f"{where}: {code}")
            columns[code].append(text)
        if unit_id is not None and not isinstance(unit_id, str | int):
            raise CorpusError(f"{where}: the unit id is {type(unit_id).__name__}; give a "
                              "string or a whole number")
        unit_ids.append(None if unit_id is None else str(unit_id))
        labels.append(f"line {number}")
    if not columns:
        raise CorpusError(f"{path}: no units (the file has no JSON lines)")
    return RawCorpus(columns, dict.fromkeys(columns, path.name), labels, unit_ids)


def _refuse_repeated_keys(where: str):
    """A json object hook that refuses an object naming a key twice, at any depth."""
    def build(pairs: list[tuple[str, object]]) -> dict:
        seen: dict[str, object] = {}
        for key, value in pairs:
            if key in seen:
                raise CorpusError(f"{where}: the key {key!r} is given twice in one object; "
                                  "each language (and the id) once per unit")
            seen[key] = value
        return seen
    return build


def _check_unicode(text: str, where: str) -> None:
    """JSON escapes can spell a lone surrogate (\\ud800), which is not text: refuse it."""
    at = lone_surrogate(text)
    if at is not None:
        raise CorpusError(f"{where}: character {at} is a lone surrogate "
                          f"(\\u{ord(text[at]):04x}), not valid Unicode")


def read_lines(path: Path) -> list[str]:
    """Each line of a UTF-8 text file, as every line-based format reads it: only LF (or CRLF)
    ends a line, never U+2028 or NEL, and a final newline makes no extra line."""
    return split_lines(read_text(path))


def split_lines(text: str) -> list[str]:
    """One unit per line; a final newline does not make an extra, empty unit."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def split_paragraphs(text: str) -> list[str]:
    """Units separated by one or more blank lines; lines inside a paragraph keep their LF."""
    return [p.strip("\n") for p in re.split(r"\n[ \t]*\n(?:[ \t]*\n)*", text.strip("\n")) if p.strip()]


def check_same_length(columns: dict[str, list[str]], origin: dict[str, str], what: str) -> None:
    counts = {code: len(texts) for code, texts in columns.items()}
    if len(set(counts.values())) > 1:
        listing = ", ".join(f"{origin[code]}: {n}" for code, n in counts.items())
        raise CorpusError(f"misaligned: the files have different numbers of {what} ({listing})")


def _check_header(path: Path, languages: list[str]) -> None:
    if len(languages) < 1 or any(not name for name in languages):
        raise CorpusError(f"{path}: the header must name a language in every column")
    duplicates = sorted({name for name in languages if languages.count(name) > 1})
    if duplicates:
        raise CorpusError(f"{path}: the header names {', '.join(duplicates)} twice")
