"""SQLModel classes mirroring the tables that `migrations/` creates, for typed reads.

The migrations own the DDL; these only describe it (tests/test_store_schema.py checks
that they agree). Bulk writes go through `executemany`, never through these classes.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel


class Corpus(SQLModel, table=True):
    __tablename__ = "corpora"
    id: int | None = Field(default=None, primary_key=True)
    name: str
    source: str
    format: str
    content_hash: str
    n_units: int
    nfc: bool
    created: str


class CorpusLanguage(SQLModel, table=True):
    __tablename__ = "corpus_languages"
    corpus_id: int = Field(primary_key=True, foreign_key="corpora.id")
    lang: str = Field(primary_key=True)
    position: int


class Unit(SQLModel, table=True):
    __tablename__ = "units"
    corpus_id: int = Field(primary_key=True, foreign_key="corpora.id")
    unit: int = Field(primary_key=True)
    source_id: str | None = None


class Text(SQLModel, table=True):
    __tablename__ = "texts"
    id: int | None = Field(default=None, primary_key=True)
    corpus_id: int
    unit: int
    lang: str
    text: str
    bytes: int
    chars: int
