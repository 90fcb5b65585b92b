"""Run an analysis end to end: resolve, record, build every vocabulary, store, mark."""

from __future__ import annotations

import contextlib
import os
import time

from analyzer import __version__, bpe
from analyzer.errors import AnalyzerError, Busy
from analyzer.settings import RunSettings
from analyzer.store import (
    IMPORTED_SIZE,
    AnalyzerDatabase,
    DatabaseBusy,
    DatabaseGone,
    DiskFull,
    NewRun,
    RunStatus,
    StoreError,
    VocabKind,
    VocabularyRecord,
    create_run,
    finish_run,
    get_run,
    load_texts,
    mark_run,
    reap_stale_runs,
    save_pending,
)

from .algorithms import algorithm_scope, combine_sizes
from .extension import build_extension
from .jobs import JobPlan, Report, VocabularyJob, run_jobs
from .resolution import ResolvedRun, check_lossless, resolve
from .superbpe import superbpe_scope

ENGINE_VERSION = f"analyzer {__version__} / analyzer.bpe exact greedy BPE, {bpe.ENGINE} engine"
"""Recorded with every run: which analyzer and which engine (compiled or python) made it."""


WRITE_ATTEMPTS = 3
"""How many times the final transaction waits for a busy database before the results are kept
in a file instead (each attempt waits up to the busy timeout)."""


class ResultsNotStored(Busy):
    """The run finished but the database stayed locked; the message says where the results are."""


def execute_run(db: AnalyzerDatabase, settings: RunSettings, report: Report | None = None,
                stage=None, started=None) -> int:
    """Do the run and return its id. Settings are checked first (RunError); once the run is
    recorded (`started(run_id)` is called then), a failure or Ctrl-C marks it failed or
    interrupted before re-raising, and no partial result is ever written. Finished results
    that cannot be written are kept in a file (ResultsNotStored says where), never dropped."""
    stage = stage or (lambda message: None)
    with contextlib.suppress(Busy):  # a run writes anyway: mark runs whose process is gone
        reap_stale_runs(db)
    resolved = resolve(db, settings)
    stage("loading texts")
    texts = load_texts(db, resolved.corpus.id, resolved.languages)
    check_lossless(resolved, texts)
    with contextlib.ExitStack() as stack:
        cluster = None
        if settings.executor == "dask" and resolved.sizes:
            # Connected before anything is written: a scheduler that cannot be reached stores
            # nothing.
            from .cluster import connect

            stage("connecting to the Dask scheduler" if settings.scheduler
                  else "starting a local Dask cluster")
            cluster = stack.enter_context(connect(settings.scheduler, settings.jobs))
        return _execute(db, settings, resolved, texts, cluster, report, stage, started)


def _execute(db: AnalyzerDatabase, settings: RunSettings, resolved: ResolvedRun,
             texts: dict[str, list[str]], cluster, report: Report | None, stage,
             started) -> int:
    """Record the run, build its vocabularies (locally, or on `cluster`), store the results."""
    run_id = create_run(db, NewRun(
        corpus_id=resolved.corpus.id, settings=resolved.recorded_settings(),
        measured_units=resolved.measured_units, engine_version=ENGINE_VERSION))
    start = time.perf_counter()
    try:
        if started is not None:
            started(run_id)
        if cluster is not None:
            records = cluster.run(make_plans(resolved), texts, report)
        else:
            workers = settings.jobs or os.cpu_count() or 1
            records = run_jobs(make_jobs(resolved, texts), workers, report)
        records = combine_sizes(records)
        # Extensions train here, in this process, whatever the executor: their base (a
        # production tokenizer's library) is loaded once, and a few seconds of C training
        # over its ids is small beside its counting.
        records += [build_extension(base, resolved, texts, report)
                    for base in resolved.extensions]
        records += [measure_tokenizer(tokenizer, resolved, texts, report)
                    for tokenizer in resolved.tokenizers]
        records += [imported_record(name, source, counts)
                    for name, (source, counts) in resolved.imported.items()]
        store_results(db, run_id, records, round(time.perf_counter() - start, 3), stage)
    except KeyboardInterrupt as error:
        _mark(db, run_id, RunStatus.INTERRUPTED, f"stopped by {error.args[0] if error.args else 'Ctrl-C'}")
        raise
    except ResultsNotStored as error:
        _mark(db, run_id, RunStatus.FAILED, str(error))
        raise
    except BaseException as error:
        _mark(db, run_id, RunStatus.FAILED, f"{type(error).__name__}: {error}")
        raise
    return run_id


def store_results(db: AnalyzerDatabase, run_id: int, records: list[VocabularyRecord], seconds: float,
                  stage) -> None:
    """The run's one final transaction, retried while another process holds the write lock.
    If it never gets the lock, or the disk is full, the results go to a file (beside the
    database, else in the user's cache or temporary folder) and ResultsNotStored says where."""
    cause: Busy | None = None
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        stage("storing results" if attempt == 1 else
              f"storing results (the database is locked; attempt {attempt} of {WRITE_ATTEMPTS})")
        try:
            finish_run(db, run_id, records, seconds)
            return
        except DatabaseBusy as error:
            cause = error
        except (DiskFull, DatabaseGone) as error:  # waiting changes neither: keep them now
            cause = error
            break
    started = get_run(db, run_id).started  # read from this connection, which still has it
    try:
        path = save_pending(db, db.path, run_id, started, records, seconds)
    except StoreError as error:
        raise ResultsNotStored(f"run {run_id} finished, but its results could not be written: "
                               f"{cause}; and {error}") from None
    if isinstance(cause, DatabaseGone):
        raise ResultsNotStored(f"run {run_id} finished, but its results could not be written: "
                               f"{cause}. They are kept in {path} (JSON, gzipped); the run they "
                               "belong to was in the deleted database, so no database can take "
                               "them back")
    then = "once the database is free" if isinstance(cause, DatabaseBusy) else "once there is room"
    raise ResultsNotStored(f"run {run_id} finished, but its results could not be written: "
                           f"{cause}. They are kept in {path}; analyzer recover {path} stores "
                           f"them {then}")


def _mark(db: AnalyzerDatabase, run_id: int, status: RunStatus, error: str) -> None:
    """Mark the run, without letting a database error hide the error that stopped it (if the
    mark cannot be written, the next command finds the run's process gone and marks it)."""
    with contextlib.suppress(AnalyzerError):
        mark_run(db, run_id, status, error)


def measure_tokenizer(tokenizer, run: ResolvedRun, texts: dict[str, list[str]],
                      report: Report | None) -> VocabularyRecord:
    """Count every measured unit of every language with a production tokenizer's own encoder;
    stored like a vocabulary of the run at its real size, without merges."""
    if report:
        report(tokenizer.name, "count", 0, 1)
    start = time.perf_counter()
    counts = {lang: tokenizer.count([texts[lang][u] for u in run.measured_units])
              for lang in run.languages}
    if report:
        report(tokenizer.name, "done", 1, 1)
    framing = tokenizer.entry.framing if tokenizer.entry else None
    return VocabularyRecord(scope=tokenizer.name, kind=VocabKind.PRODUCTION, size=tokenizer.size,
                            counts={tokenizer.size: counts},
                            seconds=round(time.perf_counter() - start, 3),
                            library=tokenizer.library, source=tokenizer.source,
                            framing=framing.tokens if framing else None,
                            framing_basis=str(framing.basis) if framing else None)


def imported_record(name: str, source: str, counts: dict[str, list[int]]) -> VocabularyRecord:
    """Counts measured elsewhere, stored like a production tokenizer's, of unknown size."""
    from analyzer.external.imported import LIBRARY

    return VocabularyRecord(scope=name, kind=VocabKind.IMPORTED, size=IMPORTED_SIZE,
                            counts={IMPORTED_SIZE: counts}, library=LIBRARY, source=source)


def make_jobs(run: ResolvedRun, texts: dict[str, list[str]]) -> list[VocabularyJob]:
    """The run's jobs with their texts (see `make_plans`)."""
    return [plan.job(texts) for plan in make_plans(run)]


def make_plans(run: ResolvedRun) -> list[JobPlan]:
    """The shared (and parity-aware) vocabulary counts every language; a per-language one
    counts its own language and the pivot, or every language with `cross`. The training mix
    (`weights`) is the shared and parity-aware vocabularies'; a language's own is its alone."""
    settings = run.settings

    def plan(kind: VocabKind, scope: str, train_on: list[str], count: list[str],
             pretokenizer: str, transition: int | None = None,
             sizes: list[int] | None = None) -> JobPlan:
        everyone = not kind.trained_on_one_language
        parity = kind == VocabKind.PARITY
        return JobPlan(
            kind, scope, train_on, count, run.train_units, run.measured_units, sizes or run.sizes,
            settings.tie_break, settings.min_pair_count, pretokenizer,
            weights=run.weights if everyone else {},
            global_merges=settings.global_merges if parity else 0,
            # With a holdout, the held-out units decide whose turn it is; else the training ones.
            dev_measured=parity and bool(settings.holdout), transition=transition)

    def counted_by(lang: str) -> list[str]:
        return run.languages if settings.cross else list(dict.fromkeys([lang, run.pivot]))

    if not run.sizes:  # production tokenizers only: nothing to train
        return []
    plans = []
    for pretokenizer in run.pretokenizers:
        plans.append(plan(VocabKind.SHARED, VocabKind.SHARED, run.languages, run.languages,
                          pretokenizer))
        if settings.parity:
            plans.append(plan(VocabKind.PARITY, VocabKind.PARITY, run.languages, run.languages,
                              pretokenizer))
        for transition in run.superbpe:
            plans.append(plan(VocabKind.SUPERBPE, superbpe_scope(transition), run.languages,
                              run.languages, pretokenizer, transition))
        if settings.per_language:
            for lang in run.languages:
                counted = counted_by(lang)
                plans.append(plan(VocabKind.LANGUAGE, lang, [lang], counted, pretokenizer))
                for transition in run.superbpe:
                    plans.append(plan(VocabKind.LANGUAGE_SUPERBPE,
                                      superbpe_scope(transition, lang), [lang], counted,
                                      pretokenizer, transition))
        # Unigram and WordPiece: one job per size, each size its own training.
        for algorithm in run.algorithms[1:]:
            for size in run.sizes:
                plans.append(plan(VocabKind.trained_with(algorithm, one_language=False),
                                  algorithm_scope(algorithm), run.languages, run.languages,
                                  pretokenizer, sizes=[size]))
                if settings.per_language:
                    for lang in run.languages:
                        plans.append(plan(VocabKind.trained_with(algorithm, one_language=True),
                                          algorithm_scope(algorithm, lang), [lang], counted_by(lang),
                                          pretokenizer, sizes=[size]))
    return plans
