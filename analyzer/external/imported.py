"""Token counts measured elsewhere, brought in a CSV file: a closed tokenizer's (a provider's
count-tokens endpoint), stored in a run beside the tokenizers it measured itself.

The file has a header row naming at least the columns `unit`, `lang` and `tokens` (in any order;
`language` is read as `lang`; other columns are ignored), and one row per (unit, language):

    unit,lang,tokens
    0,eng_Latn,31
    0,kor_Hang,52

`unit` is the unit's index in the corpus, counting from 0 (line 1 of a folder corpus is unit
0), as `analyzer export --units --format csv` writes it, so that file's rows of one vocabulary
read back as they were. `lang` is any code `analyzer ingest` reads (`en`, `eng_Latn`).

Reading checks the file on its own (`read_counts`: whole numbers, no row twice); `counts_for`
checks it against a run (every measured unit of every run language present), naming the line
at fault.

>>> imported = parse_counts("demo", "unit,lang,tokens\\n0,en,3\\n0,kor_Hang,5\\n", "demo.csv")
>>> imported.counts_for(["eng_Latn", "kor_Hang"], [0], n_units=1)
{'eng_Latn': [3], 'kor_Hang': [5]}
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from analyzer.corpus import CorpusError, normalise_language
from analyzer.errors import Invalid
from analyzer.settings import MAX_STORED_INT, MAX_UNIT_TOKENS

COLUMNS = ("unit", "lang", "tokens")
ALIASES = {"language": "lang"}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
"""An imported vocabulary's name: what tables, charts and exports call it (a model's name).
Never with the characters the run's own scopes use (`analyzer.identity.RESERVED`)."""
LIBRARY = "imported"
"""What an imported vocabulary records as the library that counted: none of analyzer's."""


class CountsError(Invalid):
    """A counts file that cannot be imported; the message names the file, the line and the
    value."""


@dataclass(frozen=True)
class ImportedCounts:
    """A counts file, read and checked on its own: `rows[(lang, unit)] = (tokens, line)`."""

    name: str
    file: str
    sha256: str
    rows: dict[tuple[str, int], tuple[int, int]]

    @property
    def source(self) -> str:
        """Where the counts came from, as the run records it."""
        return f"{self.file} (SHA-256 {self.sha256}, {len(self.rows):,} rows)"

    def counts_for(self, languages: list[str], units: list[int], n_units: int
                   ) -> dict[str, list[int]]:
        """Each language's count of each unit in `units`, checked against a corpus of
        `n_units` units: a unit outside it is refused, and so is a language or unit of the
        run the file leaves out. Rows of other languages and units are not used."""
        for (lang, unit), (_, line) in self.rows.items():
            if unit >= n_units:
                raise self._error(f"line {line}: unit {unit} is not in the corpus (its units "
                                  f"are 0 to {n_units - 1})", line, unit, lang)
        counts = {}
        present = {lang for lang, _ in self.rows}
        for lang in languages:
            if lang not in present:
                raise CountsError(f"{self.file}: no counts for {lang}, a language of the run; "
                                  f"measure it, or leave it out of the run's languages",
                                  file=self.file, language=lang, setting="counts")
            missing = [unit for unit in units if (lang, unit) not in self.rows]
            if missing:
                more = f" and {len(missing) - 1:,} more" if len(missing) > 1 else ""
                raise CountsError(f"{self.file}: no count for {lang} unit {missing[0]}{more}; "
                                  f"every measured unit of every language of the run needs one",
                                  file=self.file, language=lang, unit=missing[0] + 1,
                                  setting="counts")
            counts[lang] = [self.rows[(lang, unit)][0] for unit in units]
        return counts

    def _error(self, message: str, line: int, unit: int | None = None,
               lang: str | None = None) -> CountsError:
        return CountsError(f"{self.file} {message}", file=self.file, line=line, language=lang,
                           unit=None if unit is None else unit + 1, setting="counts")


def parse_spec(spec: str) -> tuple[str, Path]:
    """`NAME=FILE` as (name, path), the name checked.

    >>> parse_spec("claude-sonnet-4=counts.csv")
    ('claude-sonnet-4', PosixPath('counts.csv'))
    """
    name, sep, path = spec.partition("=")
    if not sep or not path:
        raise CountsError(f"{{setting}} {spec!r}: give NAME=FILE (e.g. "
                          "claude-sonnet-4=counts.csv)", setting="counts", value=spec)
    if not NAME.fullmatch(name):
        raise CountsError(f"{{setting}} {spec!r}: the name {name!r} must start with a letter or "
                          "digit and hold only letters, digits and . _ + - (at most 100)",
                          setting="counts", value=spec)
    return name, Path(path)


def read_counts(spec: str) -> ImportedCounts:
    """Read and check a `NAME=FILE` counts file (CountsError, naming the file and line)."""
    name, path = parse_spec(spec)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CountsError(f"{{setting}} {path}: cannot be read ({error.strerror or error})",
                          setting="counts", file=str(path)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise CountsError(f"{path} line {line}: not UTF-8 text", file=str(path), line=line,
                          setting="counts") from None
    return parse_counts(name, text, str(path), hashlib.sha256(data).hexdigest())


def parse_counts(name: str, text: str, file: str, sha256: str = "") -> ImportedCounts:
    """The rows of a counts file's text, each checked: a whole number of tokens of at least 1,
    a unit index of at least 0, a language code, and no (unit, language) twice."""
    imported = ImportedCounts(name, file, sha256, {})
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        raise imported._error("line 1: the file is empty; its first line names the columns "
                              f"{', '.join(COLUMNS)}", 1)
    names = [ALIASES.get(column.strip().lower(), column.strip().lower()) for column in header]
    missing = [column for column in COLUMNS if column not in names]
    if missing:
        raise imported._error(f"line 1: the header has no {', '.join(missing)} column (it has "
                              f"{', '.join(header)}); it names {', '.join(COLUMNS)}", 1)
    repeated = [column for column in COLUMNS if names.count(column) > 1]
    if repeated:
        raise imported._error(f"line 1: the header has {repeated[0]} twice", 1)
    where = {column: names.index(column) for column in COLUMNS}
    codes: dict[str, str] = {}
    for line, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        if len(row) != len(header):
            raise imported._error(f"line {line}: {len(row)} fields, the header has "
                                  f"{len(header)}", line)
        unit = _whole(imported, row[where["unit"]], "unit", line, lowest=0)
        code = row[where["lang"]].strip()
        if code not in codes:
            try:
                codes[code] = normalise_language(code)
            except CorpusError as error:
                raise imported._error(f"line {line}: {error}", line, unit) from None
        lang = codes[code]
        tokens = _whole(imported, row[where["tokens"]], "tokens", line, lowest=1)
        if (lang, unit) in imported.rows:
            first = imported.rows[(lang, unit)][1]
            raise imported._error(f"line {line}: {lang} unit {unit} again (first on line "
                                  f"{first})", line, unit, lang)
        imported.rows[(lang, unit)] = (tokens, line)
    if not imported.rows:
        raise imported._error("has a header and no counts", 1)
    return imported


def _whole(imported: ImportedCounts, cell: str, column: str, line: int, lowest: int) -> int:
    """A cell that must be a whole number from `lowest` (a text has at least one token)."""
    value = cell.strip()
    if not re.fullmatch(r"[0-9]+", value) or not lowest <= int(value.lstrip("0")[:40] or "0"):
        what = "a unit index (0 or more)" if column == "unit" else "a whole number of tokens (1 or more)"
        raise imported._error(f"line {line}: {column} {cell[:40]!r} is not {what}", line)
    most = MAX_STORED_INT if column == "unit" else MAX_UNIT_TOKENS
    digits = value.lstrip("0") or "0"  # compared by length first: int() refuses 4,301 digits
    if len(digits) > len(str(most)) or int(digits) > most:
        what = ("a unit index" if column == "unit"
                else "the tokens of one unit (counts are stored as 32-bit numbers)")
        shown = digits if len(digits) <= 40 else f"{digits[:20]}... ({len(digits):,} digits)"
        raise imported._error(f"line {line}: {column} {shown} is above {most:,}, the most "
                              f"{what} can be", line)
    return int(digits)
