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


class Run(SQLModel, table=True):
    __tablename__ = "runs"
    id: int | None = Field(default=None, primary_key=True)
    corpus_id: int = Field(foreign_key="corpora.id")
    languages: str  # JSON list of codes, in run order
    pivot: str
    sizes: str  # JSON list of ints, ascending
    per_language: bool
    cross_matrix: bool
    holdout: float
    seed: int
    measured_units: str  # JSON list of unit indices the counts are aligned with
    tie_break: str
    min_pair_count: int
    engine_version: str
    status: str  # running | complete | failed | interrupted
    error: str | None = None
    pid: int | None = None
    started: str
    finished: str | None = None
    seconds: float | None = None
    host: str | None = None
    pid_start: str | None = None


class Meta(SQLModel, table=True):
    __tablename__ = "meta"
    key: str = Field(primary_key=True)
    value: str


class Vocabulary(SQLModel, table=True):
    __tablename__ = "vocabularies"
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="runs.id")
    scope: str  # "shared", a language code, or a production tokenizer's name
    kind: str  # "trained" or "production"
    size: int  # trained: 256 + merges asked for; production: its real size
    trained_bytes: int | None = None
    merges_learned: int | None = None
    stop_reason: str | None = None
    seconds: float | None = None
    roundtrip_ok: bool | None = None
    library: str | None = None  # production tokenizers: the library and version that counted
    source: str | None = None  # production tokenizers: the files used, and how they were checked


class Merge(SQLModel, table=True):
    __tablename__ = "merges"
    vocab_id: int = Field(primary_key=True, foreign_key="vocabularies.id")
    rank: int = Field(primary_key=True)
    left_id: int
    right_id: int
    new_id: int
    count: int
    token: bytes


class TokenCount(SQLModel, table=True):
    __tablename__ = "token_counts"
    vocab_id: int = Field(primary_key=True, foreign_key="vocabularies.id")
    size: int = Field(primary_key=True)
    lang: str = Field(primary_key=True)
    tokens: int
    unit_tokens: bytes  # little-endian uint32 per measured unit
