"""Runs in the database: created as 'running', marked as they end, read back.

A run's row is committed first, so an interrupted or failed run is always visible and marked;
its results (`results.finish_run`) appear all at once or not at all. A run whose process was
killed outright is found by `reap_stale_runs` (its process is gone) and marked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from sqlmodel import col, select

from analyzer.identity import PLUGIN_GROUP, VocabKind, load_plugins
from analyzer.settings import RECORDED, RunSettings

from .db import AnalyzerDatabase, write_transaction
from .errors import NotFound, StoreError
from .kinds import RunStatus
from .models import CorpusRow, RunRead, RunRow, VocabularyRead, VocabularyRow
from .processes import is_alive, this_process
from .results import StoredMerge
from .session import session
from .sqlite import Database
from .values import MAX_ROW_ID, inserted_id, now, unpack_counts


@dataclass
class NewRun:
    """What a run is asked to do, as its row records it: the settings (resolved: codes
    normalised, sizes sorted; those in `analyzer.settings.RECORDED` are stored), the corpus
    and the units measured, and the engine."""

    corpus_id: int
    settings: RunSettings
    measured_units: list[int]
    engine_version: str


COLUMN_OF = {"cross": "cross_matrix", "count": "count_convention"}
"""The runs table's column of a recorded setting, where it is not the setting's own name."""


def _column(name: str) -> str:
    return COLUMN_OF.get(name, name)


def _stored(value):
    """A setting's value as its column holds it: lists and dicts as JSON, booleans as 0/1."""
    if isinstance(value, list | dict):
        return json.dumps(value)
    return int(value) if isinstance(value, bool) else value


def create_run(db: Database, new: NewRun) -> int:
    """Record a new run as 'running' (committed at once) and return its id."""
    host, pid, pid_start = this_process()
    columns = {
        "corpus_id": new.corpus_id,
        **{_column(name): _stored(getattr(new.settings, name)) for name in RECORDED},
        "measured_units": json.dumps(new.measured_units), "engine_version": new.engine_version,
        "status": RunStatus.RUNNING, "pid": pid, "host": host, "pid_start": pid_start,
        "started": now(),
    }
    with write_transaction(db):
        cursor = db.execute(f"INSERT INTO runs ({', '.join(columns)}) "
                            f"VALUES ({', '.join('?' * len(columns))})", list(columns.values()))
        return inserted_id(cursor)


class StoredModel(NamedTuple):
    """A trained model as the run stored it."""

    size: int
    """The size it was trained for."""
    entries: int
    """Entries its vocabulary has (at most `size`: fewer where the text had no more)."""
    sha256: str
    document: bytes


def load_model(db: AnalyzerDatabase, run_id: int, scope: str, pretokenizer: str,
               size: int | None = None) -> StoredModel:
    """A Unigram or WordPiece vocabulary's model at `size` (default: its largest); NotFound
    naming the sizes it has, StoreError if its bytes no longer match their SHA-256."""
    vocab_id = _vocabulary_id(db, run_id, scope, pretokenizer)
    rows = {row[0]: StoredModel(*row) for row in db.execute(
        "SELECT size, entries, sha256, document FROM vocabulary_models WHERE vocab_id = ? "
        "ORDER BY size", [vocab_id])}
    if not rows:
        raise NotFound(f"{scope} in run {run_id} has no stored model (it is not a Unigram or "
                       "WordPiece vocabulary)")
    size = size or max(rows)
    if size not in rows:
        raise NotFound(f"{scope} in run {run_id} was trained at sizes "
                       f"{', '.join(map(str, rows))}, not {size} (each size is its own training)")
    found = rows[size]
    if hashlib.sha256(found.document).hexdigest() != found.sha256:
        raise StoreError(f"{scope} at size {size} in run {run_id}: the stored model's bytes do "
                         f"not match their SHA-256 ({found.sha256}); the database is damaged")
    return found


def model_digests(db: AnalyzerDatabase, run_id: int
                  ) -> dict[tuple[str, str], list[dict]]:
    """`{(scope, pretokenizer): [{"size", "entries", "sha256"}]}`: the models a run stored,
    without their bytes."""
    found: dict[tuple[str, str], list[dict]] = {}
    for scope, pretokenizer, size, entries, digest in db.execute(
            "SELECT v.scope, v.pretokenizer, m.size, m.entries, m.sha256 FROM vocabulary_models m "
            "JOIN vocabularies v ON v.id = m.vocab_id WHERE v.run_id = ? ORDER BY v.id, m.size",
            [run_id]):
        found.setdefault((scope, pretokenizer), []).append(
            {"size": size, "entries": entries, "sha256": digest})
    return found


def record_training(db: Database, run_id: int, training: dict) -> None:
    """Record what a run trained on (a training source's sample), once it is known."""
    with write_transaction(db):
        db.execute("UPDATE runs SET training = ? WHERE id = ?", [json.dumps(training), run_id])


def mark_run(db: Database, run_id: int, status: RunStatus, error: str | None = None) -> None:
    """Mark a run failed or interrupted; its partial results were never written."""
    with write_transaction(db):
        db.execute("UPDATE runs SET status = ?, error = ?, finished = ? WHERE id = ?",
                   [status, error, now(), run_id])


def reap_stale_runs(db: Database) -> int:
    """Mark 'running' runs whose process is gone as interrupted; how many. Called by what
    writes anyway (a run starting, an ingest, a recovery): reads never write, they report such
    a run as interrupted without marking it (`_run_read`)."""
    stale = [run_id for run_id, host, pid, started in
             db.execute("SELECT id, host, pid, pid_start FROM runs WHERE status = ?",
                        [RunStatus.RUNNING]).fetchall()
             if not is_alive(host, pid, started)]
    for run_id in stale:
        mark_run(db, run_id, RunStatus.INTERRUPTED, _why_stale(db, run_id))
    return len(stale)


def _why_stale(db: Database, run_id: int) -> str:
    from .pending import find_pending

    path = getattr(db, "path", None)
    row = db.execute("SELECT started FROM runs WHERE id = ?", [run_id]).fetchone()
    saved = find_pending(db, path, run_id, row[0]) if path and row else None
    if saved is not None:
        return (f"its results could not be written and are kept in {saved}; "
                f"analyzer recover {saved} stores them")
    return "the process ended before the run finished (killed?)"


def running_runs(db: Database) -> list[int]:
    """Ids of the runs still in progress (reap_stale_runs first, to leave out the dead)."""
    return [row[0] for row in db.execute("SELECT id FROM runs WHERE status = ? ORDER BY id",
                                         [RunStatus.RUNNING])]


def list_runs(db: AnalyzerDatabase) -> list[RunRead]:
    """Every run, oldest first."""
    with session(db) as s:
        rows = s.exec(select(RunRow, CorpusRow.name)
                      .join(CorpusRow, col(CorpusRow.id) == col(RunRow.corpus_id))
                      .order_by(col(RunRow.id))).all()
        return [_run_read(run, name, db) for run, name in rows]


def get_run(db: AnalyzerDatabase, run_id: int) -> RunRead:
    """One run; NotFound naming the runs there are if it is absent."""
    with session(db) as s:
        row = s.exec(select(RunRow, CorpusRow.name)
                     .join(CorpusRow, col(CorpusRow.id) == col(RunRow.corpus_id))
                     .where(RunRow.id == run_id)).first() if 1 <= run_id <= MAX_ROW_ID else None
        if row is None:
            ids = s.exec(select(RunRow.id).order_by(col(RunRow.id))).all()
            known = f"; runs here: {', '.join(map(str, ids))}" if ids else "; there are no runs yet"
            raise NotFound(f"no run {run_id}{known}")
        return _run_read(*row, db)


def _run_read(run: RunRow, corpus: str, db: Database) -> RunRead:
    """The read model of a row; a run still marked running whose process is gone is what it
    is, interrupted, with the reason (the next write marks it so in the database)."""
    assert run.id is not None  # a row read back always has its id
    status, error = RunStatus(run.status), run.error
    if status == RunStatus.RUNNING and not is_alive(run.host, run.pid, run.pid_start):
        status = RunStatus.INTERRUPTED
        error = _why_stale(db, run.id)
    recorded = {}
    for name in RECORDED:
        value = getattr(run, _column(name))
        kind = RunRead.model_fields[name].annotation
        recorded[name] = json.loads(value) if kind in JSON_KINDS and value is not None else value
    return RunRead(
        id=run.id, corpus=corpus, status=status, started=run.started,
        finished=run.finished, seconds=run.seconds, error=error, corpus_id=run.corpus_id,
        measured_units=json.loads(run.measured_units), engine_version=run.engine_version,
        training=json.loads(run.training) if run.training else None, **recorded)


JSON_KINDS = {list[str], list[int], dict[str, int], list[str] | None}
"""The read model's types whose column holds JSON (booleans and numbers pydantic reads)."""


def vocabularies(db: AnalyzerDatabase, run_id: int) -> list[VocabularyRead]:
    """The vocabularies of a run, in the order they were stored."""
    with session(db) as s:
        rows = s.exec(select(VocabularyRow).where(VocabularyRow.run_id == run_id)
                      .order_by(col(VocabularyRow.id))).all()
        unknown = {row.kind for row in rows} - set(VocabKind)
        if unknown and load_plugins():  # a plug-in installed, not yet imported
            unknown -= set(VocabKind)
        if unknown:
            raise StoreError(f"run {run_id} holds vocabularies of a kind this analyzer does not "
                             f"know ({', '.join(map(repr, sorted(unknown)))}): a plug-in's, made where it "
                             f"was installed; install it here (entry point group {PLUGIN_GROUP}) "
                             "to read the run")
        return [VocabularyRead.model_validate(row, from_attributes=True) for row in rows]


def measured_names(db: AnalyzerDatabase) -> dict[int, list[str]]:
    """Each run's vocabularies that are measured, not trained (production tokenizers, imported
    counts), by name, in the order they were stored: what a list of runs says each measured.
    A run without any (or not complete: its vocabularies are stored at its end) is absent."""
    measured = [str(kind) for kind in VocabKind if not kind.trained]
    found: dict[int, list[str]] = {}
    with session(db) as s:
        rows = s.exec(select(VocabularyRow.run_id, VocabularyRow.scope)
                      .where(col(VocabularyRow.kind).in_(measured))
                      .order_by(col(VocabularyRow.id))).all()
    for run_id, scope in rows:
        names = found.setdefault(run_id, [])
        if scope not in names:
            names.append(scope)
    return found


def load_counts(db: Database, run_id: int) -> list[tuple[str, str | None, int, str, list[int]]]:
    """`(scope, pretokenizer, size, lang, [tokens per measured unit])` for every count of the
    run (pretokenizer None for production tokenizers)."""
    rows = db.execute(
        "SELECT v.scope, v.pretokenizer, c.size, c.lang, c.unit_tokens FROM token_counts c "
        "JOIN vocabularies v ON v.id = c.vocab_id WHERE v.run_id = ? ORDER BY v.id, c.size, c.lang",
        [run_id])
    return [(scope, pretokenizer, size, lang, unpack_counts(blob))
            for scope, pretokenizer, size, lang, blob in rows]


def load_joined_counts(db: Database, run_id: int
                       ) -> dict[tuple[str, str | None, int], dict[str, int]]:
    """`{(scope, pretokenizer, size): {lang: tokens of its measured units joined into one
    text}}` of a run that counted them so (`count` joined); empty for any other."""
    found: dict[tuple[str, str | None, int], dict[str, int]] = {}
    for scope, pretokenizer, size, lang, tokens in db.execute(
            "SELECT v.scope, v.pretokenizer, c.size, c.lang, c.joined_tokens FROM token_counts c "
            "JOIN vocabularies v ON v.id = c.vocab_id WHERE v.run_id = ? AND c.joined_tokens "
            "IS NOT NULL ORDER BY v.id, c.size, c.lang", [run_id]):
        found.setdefault((scope, pretokenizer, size), {})[lang] = tokens
    return found


def load_split_words(db: Database, run_id: int) -> dict[str, dict[str, int]]:
    """`{tokenizer: {lang: words its tokens cut}}` of a run's production tokenizers."""
    found: dict[str, dict[str, int]] = {}
    for scope, lang, words in db.execute(
            "SELECT v.scope, c.lang, c.split_words FROM token_counts c JOIN vocabularies v ON "
            "v.id = c.vocab_id WHERE v.run_id = ? AND c.split_words IS NOT NULL "
            "ORDER BY v.id, c.lang", [run_id]):
        found.setdefault(scope, {})[lang] = words
    return found


def load_vocabulary_scripts(db: Database, run_id: int) -> dict[str, dict[str, int]]:
    """`{tokenizer: {script: tokens}}` of a run's production tokenizers, largest first."""
    found: dict[str, dict[str, int]] = {}
    for scope, script, tokens in db.execute(
            "SELECT v.scope, s.script, s.tokens FROM vocabulary_scripts s JOIN vocabularies v ON "
            "v.id = s.vocab_id WHERE v.run_id = ? ORDER BY v.id, s.tokens DESC, s.script",
            [run_id]):
        found.setdefault(scope, {})[script] = tokens
    return found


def load_vocabulary_overlaps(db: Database, run_id: int) -> list[tuple[str, str, int, int]]:
    """`(tokenizer, other, tokens both have, tokens either has)` for each pair of a run's
    production tokenizers, in the run's order."""
    return [tuple(row) for row in db.execute(
        "SELECT v.scope, o.other, o.shared, o.either FROM vocabulary_overlaps o JOIN "
        "vocabularies v ON v.id = o.vocab_id WHERE v.run_id = ? ORDER BY v.id, o.rowid",
        [run_id])]


def load_chunk_counts(db: Database, run_id: int) -> dict[str, dict[str, list[int]]]:
    """`{pretokenizer: {lang: [chunks of each measured unit]}}` of a run's pre-tokenizers."""
    found: dict[str, dict[str, list[int]]] = {}
    for pretokenizer, lang, blob in db.execute(
            "SELECT pretokenizer, lang, unit_chunks FROM chunk_counts WHERE run_id = ? "
            "ORDER BY pretokenizer, lang", [run_id]):
        found.setdefault(pretokenizer, {})[lang] = unpack_counts(blob)
    return found


def vocabulary_totals(db: AnalyzerDatabase, run_id: int, scope: str, size: int,
                      pretokenizer: str | None = None) -> dict[str, int]:
    """`{lang: tokens}` under one vocabulary of the run at `size`, from the stored totals (the
    first pre-tokenizer's, unless one is named)."""
    vocab_id = _vocabulary_id(db, run_id, scope, pretokenizer)
    rows = db.execute("SELECT lang, tokens FROM token_counts WHERE vocab_id = ? AND size = ?",
                      [vocab_id, size])
    return dict(rows.fetchall())


def load_merges(db: AnalyzerDatabase, run_id: int, scope: str,
                pretokenizer: str | None = None, limit: int | None = None) -> list[StoredMerge]:
    """A vocabulary's merges in rank order (the run's first pre-tokenizer's, unless one is
    named), the first `limit` only if given; StoreError if there is no such run or
    vocabulary."""
    return [StoredMerge(*row) for row in iter_merges(db, run_id, scope, pretokenizer, limit)]


def iter_merges(db: AnalyzerDatabase, run_id: int, scope: str, pretokenizer: str | None = None,
                limit: int | None = None) -> Iterator[tuple[int, int, int, int, bytes]]:
    """`load_merges`, as plain (left, right, new_id, count, token) tuples read one at a time:
    for writing out hundreds of vocabularies without holding them."""
    vocab_id = _vocabulary_id(db, run_id, scope, pretokenizer)
    yield from db.execute("SELECT left_id, right_id, new_id, count, token FROM merges "
                          "WHERE vocab_id = ? ORDER BY rank LIMIT ?",
                          [vocab_id, -1 if limit is None else limit])


def _vocabulary_id(db: AnalyzerDatabase, run_id: int, scope: str, pretokenizer: str | None) -> int:
    """The id of a run's vocabulary; StoreError naming what the run has if it has none such."""
    rows = db.execute("SELECT id, pretokenizer FROM vocabularies WHERE run_id = ? AND scope = ? "
                      "ORDER BY id", [run_id, scope]).fetchall()
    if pretokenizer is not None:
        rows = [row for row in rows if row[1] == pretokenizer]
    if not rows:
        get_run(db, run_id)  # "no run N" before "no vocabulary" (read only then: an export
        # asks for each of hundreds of vocabularies, and a run read is a query and a check)
        names = [f"{s}" if p in (None, "none") else f"{s} ({p})" for s, p in db.execute(
            "SELECT scope, pretokenizer FROM vocabularies WHERE run_id = ? ORDER BY id", [run_id])]
        wanted = scope if pretokenizer in (None, "none") else f"{scope} ({pretokenizer})"
        raise NotFound(f"run {run_id} has no vocabulary {wanted!r}; it has: "
                         f"{', '.join(dict.fromkeys(names)) or 'none (the run did not complete)'}")
    return rows[0][0]


def runs_of_corpus(db: Database, corpus_id: int) -> int:
    return db.execute("SELECT count(*) FROM runs WHERE corpus_id = ?", [corpus_id]).fetchone()[0]
