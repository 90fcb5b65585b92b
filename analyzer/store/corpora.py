"""Corpora in the database: save one atomically, list them, describe one, load its texts."""

from __future__ import annotations

import unicodedata

import numpy as np
from sqlalchemy import func
from sqlmodel import Session, col, select

from analyzer.corpus import ParallelCorpus, language_name, lone_surrogate
from analyzer.errors import Conflict, did_you_mean, setting

from .db import AnalyzerDatabase, write_transaction
from .errors import NotFound, StoreError
from .models import CorpusDetail, CorpusLanguageRow, CorpusRead, CorpusRow, LanguageStats, TextRow
from .runs import runs_of_corpus
from .session import session
from .values import inserted_id, now


def save_corpus(db: AnalyzerDatabase, corpus: ParallelCorpus, name: str, *, replace: bool = False) -> str:
    """Store the corpus under `name` in one transaction; "created", "replaced" or "unchanged".

    The same content under the same name is a no-op; other content under a taken name is a
    StoreError unless `replace`.
    """
    check_corpus_name(name)
    content_hash = corpus.content_hash()
    # The name check and the write are one transaction under the write lock, so two ingests
    # of the same name at once cannot both pass the check.
    with write_transaction(db):
        existing = db.execute("SELECT id, content_hash, source FROM corpora WHERE name = ?",
                              [name]).fetchone()
        if existing and existing[1] == content_hash:
            return "unchanged"
        if existing and replace:
            n_runs = runs_of_corpus(db, existing[0])
            if n_runs:
                raise Conflict(f"corpus {name!r} has {n_runs} run(s) whose results refer to "
                               "its units; ingest the new content under another {setting:name}",
                               setting="replace")
        if existing and not replace:
            raise Conflict(f"a corpus named {name!r} already exists (from {existing[2]}) with "
                           "other content; pass {setting:replace} to replace it, or "
                           "{setting:name} to choose another name", setting="name", value=name)
        if existing:
            db.execute("DELETE FROM corpora WHERE id = ?", [existing[0]])
        cursor = db.execute(
            "INSERT INTO corpora (name, source, format, content_hash, n_units, nfc, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [name, corpus.source, corpus.format, content_hash, corpus.n_units, int(corpus.nfc),
             now()],
        )
        corpus_id = inserted_id(cursor)
        db.conn.executemany(
            "INSERT INTO corpus_languages (corpus_id, lang, position) VALUES (?, ?, ?)",
            [(corpus_id, lang, position) for position, lang in enumerate(corpus.languages)],
        )
        db.conn.executemany(
            "INSERT INTO units (corpus_id, unit, source_id) VALUES (?, ?, ?)",
            [(corpus_id, unit, source_id) for unit, source_id in enumerate(corpus.unit_ids)],
        )
        db.conn.executemany(
            "INSERT INTO texts (corpus_id, unit, lang, text, bytes, chars, words) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            ((corpus_id, unit, lang, text, len(text.encode("utf-8")), len(text), len(text.split()))
             for lang, column in corpus.texts.items() for unit, text in enumerate(column)),
        )
    return "replaced" if existing else "created"


MAX_NAME_LENGTH = 200
_BIDI_CONTROLS = set("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
URL_SIGNIFICANT = "/\\?#%"
"""Characters a name may not hold: in a URL (`/api/corpora/NAME`, the pages' links) or a path
each would mean something else (a folder, a query, a fragment, an escape)."""


def check_corpus_name(name: str, what: str = "corpus") -> None:
    """StoreError for a name that could not be shown, typed back or put in a URL safely: empty,
    too long, `.` or `..`, or holding `/`, `\\`, `?`, `#`, `%`, or control, line-breaking,
    direction-changing or surrogate characters. The one rule for every corpus (and source)
    name, whoever gives it (`analyzer ingest --name`, an upload's `name`).

    >>> check_corpus_name("ntrex128")
    >>> check_corpus_name("a\\x1b[31mb")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analyzer.store.errors.StoreError: corpus name 'a\\x1b[31mb' has a control character (U+001B) ...
    >>> check_corpus_name("a?b#c")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analyzer.store.errors.StoreError: corpus name 'a?b#c' has '?' at position 1, ...
    """
    if not name.strip():
        raise StoreError(f"a {what} name cannot be empty; choose one with {{setting:name}}")
    if len(name) > MAX_NAME_LENGTH:
        raise StoreError(f"a {what} name is at most {MAX_NAME_LENGTH} characters; this one has "
                         f"{len(name)}; choose another with {setting('name')}")
    for position, char in enumerate(name):
        category = unicodedata.category(char)
        if category in ("Cc", "Cs", "Zl", "Zp") or char in _BIDI_CONTROLS:
            kind = {"Cs": "surrogate", "Zl": "line separator", "Zp": "paragraph separator"}.get(
                category, "direction control" if char in _BIDI_CONTROLS else "control")
            shown = name.encode("unicode_escape", errors="backslashreplace").decode("ascii")
            raise StoreError(f"{what} name '{shown}' has a {kind} character (U+{ord(char):04X}) "
                             f"at position {position}; choose another with {setting('name')}")
    if name.strip() in (".", ".."):
        raise StoreError(f"{what} name {name!r} is not a name (in a URL or a path it means a "
                         f"folder); choose another with {setting('name')}", value=name)
    for position, char in enumerate(name):
        if char in URL_SIGNIFICANT:
            raise StoreError(f"{what} name {name!r} has {char!r} at position {position}, which "
                             f"a name may not hold (none of {' '.join(URL_SIGNIFICANT)}: in a "
                             f"URL each means something else); choose another with "
                             f"{setting('name')}", value=name)


def list_corpora(db: AnalyzerDatabase) -> list[CorpusRead]:
    """Every corpus, oldest first."""
    with session(db) as s:
        rows = s.exec(select(CorpusRow).order_by(col(CorpusRow.id))).all()
        return [_read(row, _language_stats(s, row.id), CorpusRead) for row in rows]


def get_corpus(db: AnalyzerDatabase, name: str) -> CorpusDetail:
    """One corpus by name, with its languages; StoreError listing the names there are."""
    with session(db) as s:
        row = s.exec(select(CorpusRow).where(CorpusRow.name == name)).first() \
            if lone_surrogate(name) is None else None  # such a name cannot be asked of SQLite
        if row is None:
            names = s.exec(select(CorpusRow.name).order_by(col(CorpusRow.id))).all()
            known = f" (the database has: {', '.join(names)})" if names else \
                " (the database has none)"
            raise NotFound(f"no corpus named {name!r}{did_you_mean(name, names)}{known}")
        return _read(row, _language_stats(s, row.id), CorpusDetail)


def get_corpus_by_id(db: AnalyzerDatabase, corpus_id: int) -> CorpusDetail:
    """One corpus by its id (a run's corpus)."""
    with session(db) as s:
        row = s.get(CorpusRow, corpus_id)
        if row is None:
            raise StoreError(f"no corpus with id {corpus_id}")
        return _read(row, _language_stats(s, corpus_id), CorpusDetail)


def load_texts(db: AnalyzerDatabase, corpus_id: int, languages: list[str]) -> dict[str, list[str]]:
    """The texts of the given languages, each in unit order."""
    texts: dict[str, list[str]] = {lang: [] for lang in languages}
    for lang in languages:
        rows = db.execute("SELECT text FROM texts WHERE corpus_id = ? AND lang = ? ORDER BY unit",
                          [corpus_id, lang])
        texts[lang] = [row[0] for row in rows]
    return texts


def load_unit_ids(db: AnalyzerDatabase, corpus: CorpusDetail) -> list[str | None]:
    """Each unit's id in its source (a FLORES id such as `devtest:17`, a TMX `tuid`), None
    where the source gave none, in unit order."""
    found: list[str | None] = [None] * corpus.units
    for unit, source_id in db.execute("SELECT unit, source_id FROM units WHERE corpus_id = ?",
                                      [corpus.id]):
        if 0 <= unit < corpus.units:
            found[unit] = source_id
    return found


def load_unit(db: AnalyzerDatabase, corpus: CorpusDetail, unit: int) -> dict[str, str]:
    """One aligned unit in every language of the corpus (in the corpus's language order);
    NotFound when the corpus has no such unit."""
    if not 0 <= unit < corpus.units:
        raise NotFound(f"corpus {corpus.name!r} has units 0 to {corpus.units - 1}, not {unit}")
    rows = dict(db.execute("SELECT lang, text FROM texts WHERE corpus_id = ? AND unit = ?",
                           [corpus.id, unit]).fetchall())
    return {lang: rows[lang] for lang in corpus.languages if lang in rows}


def unit_stats(db: AnalyzerDatabase, corpus_id: int, languages: list[str],
               units: list[int]) -> dict[str, dict[str, np.ndarray]]:
    """`{"bytes" | "chars" | "words": {lang: per-unit array aligned with units}}`, as stored
    at ingest."""
    wanted = np.asarray(units, dtype=np.int64)
    position = np.full(int(wanted.max()) + 1 if len(wanted) else 0, -1, np.int64)
    position[wanted] = np.arange(len(wanted))  # a unit's place in `units`; -1: not asked for
    stats: dict[str, dict[str, np.ndarray]] = {"bytes": {}, "chars": {}, "words": {}}
    for lang in languages:
        values = np.zeros((3, len(units)), np.int64)
        rows = np.array(db.execute("SELECT unit, bytes, chars, words FROM texts WHERE "
                                   "corpus_id = ? AND lang = ?", [corpus_id, lang]).fetchall(),
                        dtype=np.int64).reshape(-1, 4)  # a unit's row, whole arrays at once
        rows = rows[rows[:, 0] < len(position)]
        places = position[rows[:, 0]]
        rows, places = rows[places >= 0], places[places >= 0]
        values[:, places] = rows[:, 1:].T
        stats["bytes"][lang], stats["chars"][lang], stats["words"][lang] = values
    return stats


def _read(row: CorpusRow, languages: list[LanguageStats], model):
    fields: dict[str, object] = dict(id=row.id, name=row.name, source=row.source, format=row.format,
                  units=row.n_units, languages=[stats.lang for stats in languages],
                  bytes=sum(stats.bytes for stats in languages), content_hash=row.content_hash,
                  nfc=bool(row.nfc), created=row.created)
    if model is CorpusDetail:
        fields["language_stats"] = languages
    return model(**fields)


def _language_stats(s: Session, corpus_id: int | None) -> list[LanguageStats]:
    rows = s.exec(
        select(TextRow.lang, func.count(col(TextRow.id)), func.sum(TextRow.bytes),
               func.sum(TextRow.chars))
        .join(CorpusLanguageRow, (col(CorpusLanguageRow.corpus_id) == col(TextRow.corpus_id))
              & (col(CorpusLanguageRow.lang) == col(TextRow.lang)))
        .where(TextRow.corpus_id == corpus_id)
        .group_by(col(TextRow.lang))
        .order_by(col(CorpusLanguageRow.position))
    ).all()
    return [LanguageStats(lang=lang, name=language_name(lang), units=units, bytes=n_bytes,
                          chars=chars, bytes_per_char=round(n_bytes / chars, 4) if chars else 0.0)
            for lang, units, n_bytes, chars in rows]
