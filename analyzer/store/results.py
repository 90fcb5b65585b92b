"""A run's results as the store writes them: one record per vocabulary (its merges, counts,
replacements, histograms and models), all written in the run's one final transaction."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import NamedTuple

from analyzer.identity import VocabKind, VocabularyId

from .db import write_transaction
from .errors import StoreError
from .kinds import ReplacementTexts, RunStatus
from .replacements import add_histograms, add_replacements
from .sqlite import Database
from .values import inserted_id, now, pack_counts


class StoredMerge(NamedTuple):
    """One merge of a stored vocabulary, in rank order."""

    left: int
    right: int
    new_id: int
    pair_count: int
    """The pair's count when the merge was chosen (overlaps included)."""
    token: bytes


@dataclass
class VocabularyRecord:
    """One vocabulary's results, ready to store."""

    scope: str
    kind: VocabKind
    size: int
    counts: dict[int, dict[str, list[int]]]
    """`{size: {lang: [tokens of each measured unit]}}`."""
    joined: dict[int, dict[str, int]] | None = None
    """With `count` joined: `{size: {lang: tokens of its measured units joined into one
    text}}`."""
    trained_bytes: int | None = None
    merges_learned: int | None = None
    stop_reason: str | None = None
    seconds: float | None = None
    roundtrip_ok: bool | None = None
    merges: list[StoredMerge] = field(default_factory=list)
    library: str | None = None
    source: str | None = None
    pretokenizer: str | None = None
    """Trained: the pre-tokenizer's name as given ("none" for none); production: None."""
    pattern: str | None = None
    transition: int | None = None
    """SuperBPE: the size where its second stage starts."""
    base_size: int | None = None
    """An extension: its base's size (its added ids start there)."""
    framing: int | None = None
    """A production tokenizer: the tokens a one-message request adds (None: not known)."""
    framing_basis: str | None = None
    """How `framing` is known (measured, documented, none)."""
    special_tokens: int | None = None
    """A production tokenizer: the special tokens its library adds to each text it counts
    (counted with `special_tokens`)."""
    engine: str | None = None
    """A production tokenizer: what counted it ("analyzer", or its library's name)."""
    split_words: dict[str, int] | None = None
    """A production tokenizer: `{lang: words of its measured units cut by a token boundary}`
    (tokka-bench's continued words; a language written without spaces has none)."""
    scripts: dict[str, int] | None = None
    """A production tokenizer: `{script: tokens of its vocabulary written in it}`."""
    overlaps: dict[str, tuple[int, int]] | None = None
    """A production tokenizer: `{another of the run: (tokens both have, tokens either has)}`."""
    chunks: dict[str, list[int]] | None = None
    """With a pre-tokenizer: `{lang: [chunks of each measured unit]}` (one vocabulary per
    pre-tokenizer reports them; the run stores them once)."""
    chosen: list[str | None] | None = None
    """Parity-aware: for each merge, the language whose pair it was (None: chosen over all)."""
    replaced_in_training: dict[str, list[int]] | None = None
    """`{lang: [occurrences each merge replaced in its training texts, when learned]}`."""
    replaced_in_measured: dict[str, list[int]] | None = None
    """`{lang: [occurrences each merge replaces in its measured units]}`."""
    histograms: dict[int, dict[str, dict[int, int]]] | None = None
    """`{size: {lang: {token id: occurrences in the measured units}}}`."""
    models: dict[int, str] | None = None
    """Unigram and WordPiece: `{size: the trained tokenizer.json}` (each size its own
    training), stored byte for byte with its SHA-256."""

    @property
    def identity(self) -> VocabularyId:
        return VocabularyId.parse(self.scope, self.kind)


def finish_run(db: Database, run_id: int, vocabularies: list[VocabularyRecord],
               seconds: float) -> None:
    """Write every result of the run and mark it complete, in one transaction."""
    with write_transaction(db):
        status = db.execute("SELECT status FROM runs WHERE id = ?", [run_id]).fetchone()
        if status is None or status[0] == RunStatus.COMPLETE:
            raise StoreError(f"run {run_id} is {'complete' if status else 'not in the database'}; "
                             "its results cannot be written again")
        if db.execute("SELECT count(*) FROM vocabularies WHERE run_id = ?", [run_id]).fetchone()[0]:
            raise StoreError(f"run {run_id} already has results stored")
        stored_chunks = set()
        for record in vocabularies:
            add_vocabulary(db, run_id, record)
            if record.chunks and record.pretokenizer not in stored_chunks:
                stored_chunks.add(record.pretokenizer)
                db.conn.executemany(
                    "INSERT INTO chunk_counts (run_id, pretokenizer, lang, chunks, unit_chunks) "
                    "VALUES (?, ?, ?, ?, ?)",
                    ((run_id, record.pretokenizer, lang, sum(units), pack_counts(units))
                     for lang, units in record.chunks.items()))
        db.execute("UPDATE runs SET status = ?, error = NULL, finished = ?, seconds = ? "
                   "WHERE id = ?", [RunStatus.COMPLETE, now(), seconds, run_id])


def add_vocabulary(db: Database, run_id: int, record: VocabularyRecord) -> int:
    """Insert one vocabulary with its merges and token counts (inside the caller's transaction)."""
    cursor = db.execute(
        "INSERT INTO vocabularies (run_id, scope, kind, size, trained_bytes, merges_learned, "
        "stop_reason, seconds, roundtrip_ok, library, source, pretokenizer, pattern, transition, "
        "base_size, framing, framing_basis, special_tokens, engine) VALUES (?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [run_id, record.scope, record.kind, record.size, record.trained_bytes,
         record.merges_learned, record.stop_reason, record.seconds,
         None if record.roundtrip_ok is None else int(record.roundtrip_ok), record.library,
         record.source, record.pretokenizer, record.pattern, record.transition,
         record.base_size, record.framing, record.framing_basis, record.special_tokens,
         record.engine],
    )
    vocab_id = inserted_id(cursor)
    chosen = record.chosen or [None] * len(record.merges)
    db.conn.executemany(
        "INSERT INTO merges (vocab_id, rank, left_id, right_id, new_id, count, token, chosen_by) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ((vocab_id, rank, *merge, language)
         for rank, (merge, language) in enumerate(zip(record.merges, chosen))),
    )
    if record.replaced_in_training:
        add_replacements(db, vocab_id, ReplacementTexts.TRAINED, record.replaced_in_training)
    if record.replaced_in_measured:
        add_replacements(db, vocab_id, ReplacementTexts.MEASURED, record.replaced_in_measured)
    if record.histograms:
        add_histograms(db, vocab_id, record.histograms)
    db.conn.executemany(
        "INSERT INTO vocabulary_models (vocab_id, size, entries, sha256, document) "
        "VALUES (?, ?, ?, ?, ?)",
        ((vocab_id, size, _entries(document), hashlib.sha256(data).hexdigest(), data)
         for size, document in (record.models or {}).items()
         for data in [document.encode("utf-8")]))
    db.conn.executemany(
        "INSERT INTO token_counts (vocab_id, size, lang, tokens, unit_tokens, joined_tokens, "
        "split_words) VALUES (?, ?, ?, ?, ?, ?, ?)",
        ((vocab_id, size, lang, sum(units), pack_counts(units),
          record.joined[size][lang] if record.joined else None,
          (record.split_words or {}).get(lang) if size == record.size else None)
         for size, by_lang in record.counts.items() for lang, units in by_lang.items()),
    )
    db.conn.executemany(
        "INSERT INTO vocabulary_scripts (vocab_id, script, tokens) VALUES (?, ?, ?)",
        ((vocab_id, script, n) for script, n in (record.scripts or {}).items()))
    db.conn.executemany(
        "INSERT INTO vocabulary_overlaps (vocab_id, other, shared, either) VALUES (?, ?, ?, ?)",
        ((vocab_id, other, shared, either)
         for other, (shared, either) in (record.overlaps or {}).items()))
    return vocab_id


def _entries(document: str) -> int:
    """How many entries a stored model's vocabulary has (a Unigram list, a WordPiece map)."""
    return len(json.loads(document)["model"]["vocab"])


