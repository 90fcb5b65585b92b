"""SQLModel classes: the rows of the tables the store reads, and the read models it returns.

How the work is divided: the migrations (sqlite-utils `Migrations`) own the DDL; bulk writes go
through `executemany` in one transaction (sqlite-utils' connection), never through these
classes. The `...Row` classes mirror the tables the store reads with typed `select()`s (only
those; tests/test_store_schema.py checks that they agree with the migrations); the read models
(`CorpusRead`, `RunRead`, ...) are what the store's read functions return, what `--json` prints
(`model_dump(mode="json")`) and what the service answers with (FastAPI takes them as response
models as they are).
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel

from analyzer.identity import VocabKind, VocabularyId

from .kinds import QueueStatus, RunStatus

# Rows: one class per table, field for field.


class CorpusRow(SQLModel, table=True):
    __tablename__ = "corpora"
    id: int | None = Field(default=None, primary_key=True)
    name: str
    source: str
    format: str
    content_hash: str
    n_units: int
    nfc: bool
    created: str


class CorpusLanguageRow(SQLModel, table=True):
    __tablename__ = "corpus_languages"
    corpus_id: int = Field(primary_key=True, foreign_key="corpora.id")
    lang: str = Field(primary_key=True)
    position: int


class TextRow(SQLModel, table=True):
    __tablename__ = "texts"
    id: int | None = Field(default=None, primary_key=True)
    corpus_id: int
    unit: int
    lang: str
    text: str
    bytes: int
    chars: int
    words: int  # whitespace-separated words, for fertility (counted once, at ingest)


class RunRow(SQLModel, table=True):
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
    status: str  # a RunStatus
    error: str | None = None
    pid: int | None = None
    started: str
    finished: str | None = None
    seconds: float | None = None
    host: str | None = None
    pid_start: str | None = None
    pretokenizers: str = '["none"]'  # JSON list of the pre-tokenizers' names, as given
    parity: bool = False  # a parity-aware vocabulary was trained
    global_merges: int = 0  # its first merges chosen over all languages (the hybrid)
    weights: str = "{}"  # JSON {lang: n}: the training mix of the shared and parity vocabularies
    superbpe: str = "[]"  # JSON list of sizes: a SuperBPE vocabulary's transition, each
    extend: str = "[]"  # JSON list of the production tokenizers extended
    added: str = "[]"  # JSON list: tokens added to each, ascending
    extend_langs: str | None = None  # JSON list of the languages training the additions
    target: float | None = None  # the premium target of the extension report
    algorithms: str = '["bpe"]'  # JSON list: the training algorithms (bpe always first)
    train_on: str | None = None  # the training source's name (NULL: the corpus)
    train_bytes: int | None = None  # the bytes asked of it (NULL: all of it)
    min_chunk_count: int = 1  # trained on the chunks a language's sample has this often or more
    mix: str = "natural"  # how they were shared out between the languages
    skip_invalid: bool = False  # unreadable documents skipped instead of refused
    training: str | None = None  # JSON: the sample taken (see RunRead.training)
    count_convention: str = "units"  # units (summed) or joined (one text per language)
    special_tokens: bool = False  # production tokenizers' added special tokens counted


class VocabularyRow(SQLModel, table=True):
    __tablename__ = "vocabularies"
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="runs.id")
    scope: str  # "shared", "parity", a language code, or a production tokenizer's name
    kind: str  # a VocabKind
    size: int  # trained: 256 + merges asked for; production: its real size
    trained_bytes: int | None = None
    merges_learned: int | None = None
    stop_reason: str | None = None
    seconds: float | None = None
    roundtrip_ok: bool | None = None
    library: str | None = None  # production tokenizers: the library and version that counted
    source: str | None = None  # production tokenizers: the files used, and how they were checked
    pretokenizer: str | None = None  # trained: its name as given ("none", "cl100k", "re:...")
    pattern: str | None = None  # trained with a pre-tokenizer: the pattern's text
    transition: int | None = None  # SuperBPE: the size where its second stage starts
    base_size: int | None = None  # an extension: its base's size, where the added ids start
    framing: int | None = None  # production: tokens a one-message request adds (NULL: unknown)
    framing_basis: str | None = None  # how `framing` is known: measured, documented or none
    special_tokens: int | None = None  # production: special tokens its library adds per text
    engine: str | None = None  # production: what counted ("analyzer", or the library's name)


class SourceRow(SQLModel, table=True):
    __tablename__ = "sources"
    id: int | None = Field(default=None, primary_key=True)
    name: str
    documents: str  # lines or paragraphs (plain text files' documents)
    text_field: str  # JSON Lines' field, Parquet's column
    fingerprint: str
    created: str
    origin: str | None = None  # JSON: where a hub source was fetched from (HubFetched.origin)


class SourceFileRow(SQLModel, table=True):
    __tablename__ = "source_files"
    source_id: int = Field(primary_key=True, foreign_key="sources.id")
    position: int = Field(primary_key=True)
    lang: str
    path: str
    size: int
    mtime_ns: int
    sha256: str
    compression: str | None = None
    format: str
    bytes: int
    documents: int
    invalid_documents: int
    invalid_bytes: int
    problem: str | None = None


# Read models: what the store's reads return, and the documented JSON shapes.


class LanguageStats(SQLModel):
    """One language of a corpus."""

    lang: str
    name: str
    units: int
    bytes: int
    chars: int
    bytes_per_char: float


class CorpusRead(SQLModel):
    """A stored corpus (`analyzer corpora --json`, `GET /api/corpora`)."""

    id: int = Field(exclude=True)
    name: str
    source: str
    format: str
    units: int
    languages: list[str]
    bytes: int
    content_hash: str
    nfc: bool
    created: str


class CorpusDetail(CorpusRead):
    """A corpus with its languages (`analyzer corpus NAME --json`)."""

    language_stats: list[LanguageStats]


class RunRead(SQLModel):
    """A run's settings and state (`analyzer runs --json`, `GET /api/runs`)."""

    id: int
    corpus: str
    status: RunStatus
    languages: list[str]
    pivot: str
    sizes: list[int]
    per_language: bool
    cross: bool
    holdout: float
    seed: int
    tie_break: str
    min_pair_count: int
    started: str
    finished: str | None
    seconds: float | None
    error: str | None
    pretokenizers: list[str]
    parity: bool = False
    global_merges: int = 0
    weights: dict[str, int] = {}
    superbpe: list[int] = []
    extend: list[str] = []
    added: list[int] = []
    extend_langs: list[str] | None = None
    target: float | None = None
    algorithms: list[str] = ["bpe"]
    train_on: str | None = None
    train_bytes: int | None = None
    min_chunk_count: int = 1
    """With `train_on`: trained only on the chunks a language's sample has at least this many
    times (1: every chunk)."""
    mix: str = "natural"
    skip_invalid: bool = False
    count: str = "units"
    """How a language's tokens were counted: units (each unit, summed) or joined (its units
    joined into one text, counted once)."""
    special_tokens: bool = False
    """Whether production tokenizers' added special tokens were counted."""
    training: dict | None = None
    """With `train_on`: the sample the run trained on (the source's fingerprint, the seed, and
    per language the bytes asked, the bytes and documents taken, what was skipped)."""
    corpus_id: int = Field(exclude=True)
    measured_units: list[int] = Field(exclude=True)
    engine_version: str = Field(exclude=True)


class VocabularyRead(SQLModel):
    """One vocabulary of a run: trained, or a production tokenizer measured."""

    id: int = Field(exclude=True)
    scope: str
    kind: VocabKind
    size: int
    trained_bytes: int | None
    merges_learned: int | None
    stop_reason: str | None
    seconds: float | None
    roundtrip_ok: bool | None
    library: str | None
    source: str | None
    pretokenizer: str | None
    pattern: str | None
    transition: int | None = None
    """SuperBPE: the size where its second stage starts (stage 1 is `pretokenizer`'s): its T,
    or where stage 1 ran out of pairs before T (its scope keeps the T asked for)."""
    base_size: int | None = None
    """An extension of a production tokenizer: the base's size (its added ids start there)."""
    framing: int | None = None
    """A production tokenizer: the tokens its model's chat format adds to a request of one
    message (role and separator tokens, BOS, the reply's turn opened); None: not known."""
    framing_basis: str | None = None
    """How `framing` is known: measured (the model's own chat template or encoder, run by its
    library), documented (its maker's format, counted with the tokenizer) or none (a completion
    model: a request is its text)."""
    special_tokens: int | None = None
    """A production tokenizer: the special tokens its library adds to each text (a
    tokenizer.json's beginning- or end-of-text tokens); counted when the run's
    `special_tokens` is on."""
    engine: str | None = None
    """A production tokenizer: what counted it, "analyzer" (the analyzer's own engine, equal to
    `library`) or the library's name; None for runs before the engine counted any."""

    @property
    def identity(self) -> VocabularyId:
        """What the vocabulary is, typed (its kind, language, transition, name)."""
        return VocabularyId.parse(self.scope, self.kind)


class SourceLanguage(SQLModel):
    """One language of a training source."""

    lang: str
    name: str
    files: int
    bytes: int
    documents: int


class SourceFile(SQLModel):
    """One file of a training source, as registered."""

    lang: str
    path: str
    size: int
    mtime_ns: int
    sha256: str
    compression: str | None
    format: str
    bytes: int
    documents: int
    invalid_documents: int
    invalid_bytes: int
    problem: str | None


class SourceRead(SQLModel):
    """A registered training source (`analyzer sources --json`)."""

    id: int = Field(exclude=True)
    name: str
    documents: str
    text_field: str
    fingerprint: str
    created: str
    languages: list[str]
    files: int
    bytes: int
    document_count: int
    origin: dict | None = None
    """Where a source fetched from the Hugging Face hub came from (`hub`, the `revision` it was
    fetched at, `configs`, `split`, `budget`, `shards`); None for local files."""


class SourceDetail(SourceRead):
    """A source with its languages and files (`analyzer sources show NAME --json`)."""

    language_stats: list[SourceLanguage]
    file_list: list[SourceFile]


class QueuedRunRead(SQLModel):
    """A run asked of the service, in its queue (`GET /api/queue`): waiting (at `position`,
    1 next), starting, or ended: started as `run`, cancelled, or refused (`error`)."""

    id: int
    status: QueueStatus
    position: int | None
    corpus: str | None
    settings: dict
    submitted: str
    finished: str | None
    run: int | None
    error: str | None
