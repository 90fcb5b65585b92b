"""Corpora in the database: save one atomically, list them, describe one, load its texts."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from sqlalchemy import func
from sqlite_utils import Database
from sqlmodel import select

from analyzer.corpus import ParallelCorpus, language_name

from .db import write_transaction
from .errors import StoreError
from .models import Corpus, CorpusLanguage, Text
from .runs import now, runs_of_corpus
from .session import session


@dataclass(frozen=True)
class LanguageStats:
    lang: str
    name: str
    units: int
    bytes: int
    chars: int

    @property
    def bytes_per_char(self) -> float:
        return self.bytes / self.chars if self.chars else 0.0


@dataclass(frozen=True)
class CorpusSummary:
    corpus: Corpus
    languages: list[LanguageStats]

    @property
    def bytes(self) -> int:
        return sum(stats.bytes for stats in self.languages)


def save_corpus(db: Database, corpus: ParallelCorpus, name: str, *, replace: bool = False) -> str:
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
                raise StoreError(f"corpus {name!r} has {n_runs} run(s) whose results refer to "
                                 "its units; ingest the new content under another --name")
        if existing and not replace:
            raise StoreError(f"a corpus named {name!r} already exists (from {existing[2]}) with "
                             "other content; pass --replace to replace it, or --name to choose "
                             "another name")
        if existing:
            db.execute("DELETE FROM corpora WHERE id = ?", [existing[0]])
        cursor = db.execute(
            "INSERT INTO corpora (name, source, format, content_hash, n_units, nfc, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [name, corpus.source, corpus.format, content_hash, corpus.n_units, int(corpus.nfc),
             now()],
        )
        corpus_id = cursor.lastrowid
        db.conn.executemany(
            "INSERT INTO corpus_languages (corpus_id, lang, position) VALUES (?, ?, ?)",
            [(corpus_id, lang, position) for position, lang in enumerate(corpus.languages)],
        )
        db.conn.executemany(
            "INSERT INTO units (corpus_id, unit, source_id) VALUES (?, ?, ?)",
            [(corpus_id, unit, source_id) for unit, source_id in enumerate(corpus.unit_ids)],
        )
        db.conn.executemany(
            "INSERT INTO texts (corpus_id, unit, lang, text, bytes, chars) VALUES (?, ?, ?, ?, ?, ?)",
            ((corpus_id, unit, lang, text, len(text.encode("utf-8")), len(text))
             for lang, column in corpus.texts.items() for unit, text in enumerate(column)),
        )
    return "replaced" if existing else "created"


MAX_NAME_LENGTH = 200
_BIDI_CONTROLS = set("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def check_corpus_name(name: str) -> None:
    """StoreError for a name that could not be shown or typed back safely: empty, too long, or
    holding control, line-breaking, direction-changing or surrogate characters.

    >>> check_corpus_name("ntrex128")
    >>> check_corpus_name("a\\x1b[31mb")
    Traceback (most recent call last):
    ...
    analyzer.store.errors.StoreError: corpus name 'a\\x1b[31mb' has a control character (U+001B) at position 1; choose another with --name
    """
    if not name.strip():
        raise StoreError("a corpus name cannot be empty; choose one with --name")
    if len(name) > MAX_NAME_LENGTH:
        raise StoreError(f"a corpus name is at most {MAX_NAME_LENGTH} characters; this one has "
                         f"{len(name)}; choose another with --name")
    for position, char in enumerate(name):
        category = unicodedata.category(char)
        if category in ("Cc", "Cs", "Zl", "Zp") or char in _BIDI_CONTROLS:
            kind = {"Cs": "surrogate", "Zl": "line separator", "Zp": "paragraph separator"}.get(
                category, "direction control" if char in _BIDI_CONTROLS else "control")
            shown = name.encode("unicode_escape", errors="backslashreplace").decode("ascii")
            raise StoreError(f"corpus name '{shown}' has a {kind} character (U+{ord(char):04X}) "
                             f"at position {position}; choose another with --name")


def list_corpora(db: Database) -> list[CorpusSummary]:
    """Every corpus with its per-language statistics, oldest first."""
    with session(db) as s:
        corpora = s.exec(select(Corpus).order_by(Corpus.id)).all()
        return [CorpusSummary(corpus, _language_stats(s, corpus.id)) for corpus in corpora]


def get_corpus(db: Database, name: str) -> CorpusSummary:
    """One corpus by name; StoreError listing the names there are if it is absent."""
    with session(db) as s:
        corpus = s.exec(select(Corpus).where(Corpus.name == name)).first()
        if corpus is None:
            names = s.exec(select(Corpus.name).order_by(Corpus.id)).all()
            known = f"; the database has: {', '.join(names)}" if names else "; the database has none"
            raise StoreError(f"no corpus named {name!r}{known}")
        return CorpusSummary(corpus, _language_stats(s, corpus.id))


def load_texts(db: Database, corpus_id: int, languages: list[str]) -> dict[str, list[str]]:
    """The texts of the given languages, each in unit order."""
    texts: dict[str, list[str]] = {lang: [] for lang in languages}
    for lang in languages:
        rows = db.execute("SELECT text FROM texts WHERE corpus_id = ? AND lang = ? ORDER BY unit",
                          [corpus_id, lang])
        texts[lang] = [row[0] for row in rows]
    return texts


def _language_stats(s, corpus_id: int) -> list[LanguageStats]:
    rows = s.exec(
        select(Text.lang, func.count(Text.id), func.sum(Text.bytes), func.sum(Text.chars))
        .join(CorpusLanguage, (CorpusLanguage.corpus_id == Text.corpus_id)
              & (CorpusLanguage.lang == Text.lang))
        .where(Text.corpus_id == corpus_id)
        .group_by(Text.lang)
        .order_by(CorpusLanguage.position)
    ).all()
    return [LanguageStats(lang, language_name(lang), units, n_bytes, chars)
            for lang, units, n_bytes, chars in rows]
