"""Run an analysis end to end: resolve, record, build every vocabulary, store, mark."""

from __future__ import annotations

import contextlib
import dataclasses
import time

from analyzer import bpe
from analyzer.errors import AnalyzerError, Busy
from analyzer.headroom import Headroom, headroom, own_limit
from analyzer.identity import load_plugins
from analyzer.settings import RunSettings
from analyzer.store import (
    AnalyzerDatabase,
    DatabaseBusy,
    DatabaseGone,
    DiskFull,
    NewRun,
    RunStatus,
    StoreError,
    VocabularyRecord,
    create_run,
    finish_run,
    get_run,
    load_texts,
    mark_run,
    reap_stale_runs,
    record_training,
    save_pending,
)
from analyzer.version import __version__

from .builders import combine, local_costs, local_records, make_plans, run_splitters
from .chunk_cache import ChunkCache
from .errors import RunError
from .executor import Executor, executor_for
from .memory import check_corpus_memory, ran_out, table_stats
from .plan import Report, SourceTables
from .resolution import check_lossless, check_pinned_corpus, resolve
from .resolved import ResolvedRun

ENGINE_VERSION = f"analyzer {__version__} / analyzer.bpe exact greedy BPE, {bpe.ENGINE} engine"
"""Recorded with every run: which analyzer and which engine (compiled or python) made it."""


WRITE_ATTEMPTS = 3
"""How many times the final transaction waits for a busy database before the results are kept
in a file instead (each attempt waits up to the busy timeout)."""


class ResultsNotStored(Busy):
    """The run finished but the database stayed locked; the message says where the results are."""


def execute_run(db: AnalyzerDatabase, settings: RunSettings, report: Report | None = None,
                stage=None, started=None, pinned: str | None = None) -> int:
    """Do the run and return its id. Settings are checked first (RunError; with `pinned`, what
    the run was asked on (`resolution.pin_of`), a corpus or source changed since); once the run is
    recorded (`started(run_id)` is called then), a failure or Ctrl-C marks it failed or
    interrupted before re-raising, and no partial result is ever written. Finished results
    that cannot be written are kept in a file (ResultsNotStored says where), never dropped."""
    stage = stage or (lambda message: None)
    load_plugins()  # the installed plug-ins' kinds are built in every run
    with contextlib.suppress(Busy):  # a run writes anyway: mark runs whose process is gone
        reap_stale_runs(db)
    if pinned is not None:
        check_pinned_corpus(db, settings, pinned)
    resolved = resolve(db, settings)
    stage("loading texts")
    texts = load_texts(db, resolved.corpus.id, resolved.languages)
    check_lossless(resolved, texts)
    own_limit()  # a bad ANALYZER_MEMORY refused now, before the run is recorded
    with executor_for(resolved, stage) as executor:  # connected before anything is written
        return _execute(db, settings, resolved, texts, executor, report, stage, started)


def _execute(db: AnalyzerDatabase, settings: RunSettings, resolved: ResolvedRun,
             texts: dict[str, list[str]], executor: Executor, report: Report | None, stage,
             started) -> int:
    """Record the run, build its vocabularies (on `executor`), store the results."""
    run_id = create_run(db, NewRun(
        corpus_id=resolved.corpus.id, settings=resolved.recorded_settings(),
        measured_units=resolved.measured_units, engine_version=ENGINE_VERSION))
    start = time.perf_counter()
    discards: list = []
    training = False
    trains = True  # anything to train (else the run only counts: memory runs out counting)
    try:
        if started is not None:
            started(run_id)
        source = None
        if resolved.source is not None:
            cache = ChunkCache.beside(db.path) if settings.chunk_cache else ChunkCache(None)
            discards.append(cache.discard)  # a run's own folder (--no-cache), once it is done
            in_use = cache.in_use()  # not cleared under the run: held until the run ends
            in_use.__enter__()
            discards.insert(0, lambda: in_use.__exit__(None, None, None))
            source = count_sample(db, run_id, resolved, executor, cache, report, stage)
        plans = make_plans(resolved, source)
        local = local_costs(resolved)  # trained here, after the jobs (an extension)
        trains = bool(plans or local)
        # refused now, if it cannot fit, rather than killed halfway
        if source is not None:
            executor.check_memory(plans, source, local, stage, cached=settings.chunk_cache,
                                  sample=resolved.source)
        elif local:
            check_corpus_memory(headroom(), stage, local, texts, resolved.train_units,
                                run_splitters(resolved))
        training = True
        records = executor.run(plans, texts, report)
        # Local builders make theirs after the jobs, here, sharing out what they can: a
        # production tokenizer's measurement on this process's threads (its library loaded
        # once, for the checks), or on the cluster's workers.
        records = combine(records) + local_records(resolved, texts, report, source,
                                                   executor.spread)
        store_results(db, run_id, records, round(time.perf_counter() - start, 3), stage)
    except KeyboardInterrupt as error:
        _mark(db, run_id, RunStatus.INTERRUPTED, f"stopped by {error.args[0] if error.args else 'Ctrl-C'}")
        raise
    except (ResultsNotStored, AnalyzerError) as error:  # a message written for the user: as it is
        _mark(db, run_id, RunStatus.FAILED, str(error))
        raise
    except BaseException as error:
        # Memory that ran out where no prediction reached (the counting pass under a tight
        # `ulimit -v`, a limit lowered while it ran, another process's growth): said as such,
        # not as a bug.
        said = ran_out(error, headroom_or_none(), training, counting=training and not trains,
                       source=resolved.source is not None)
        _mark(db, run_id, RunStatus.FAILED, str(said) if said is not None
              else f"{type(error).__name__}: {error}")
        if said is not None:
            raise said from None
        raise
    finally:
        for discard in discards:
            discard()
    return run_id


def headroom_or_none() -> Headroom | None:
    """This process's headroom, where it can be read (not when ANALYZER_MEMORY is bad)."""
    try:
        return headroom()
    except AnalyzerError:
        return None


def count_sample(db: AnalyzerDatabase, run_id: int, resolved: ResolvedRun, executor: Executor,
                 cache: ChunkCache, report: Report | None, stage) -> SourceTables:
    """The training source's sample counted (from the cache where it can be), recorded with
    the run; the tables every job trains on."""
    assert resolved.source is not None
    plan = resolved.source
    splitters = run_splitters(resolved)
    label = f"source {plan.source.name}"
    total = sum(language.available for language in plan.languages.values())
    read = [0]

    def progress(n_bytes: int) -> None:
        read[0] += n_bytes
        if report:
            report(label, "read", read[0], total)

    stage(f"reading the training source {plan.source.name}")
    if report:
        report(label, "read", 0, total)
    tables, taken = executor.count(plan, splitters, cache, progress, stage)
    if report:
        report(label, "done", total, total)
    floor = resolved.settings.min_chunk_count
    stats = {(lang, name): table_stats(tables[(lang, name)], floor)
             for lang in plan.languages for name in splitters}
    # A floor that keeps nothing of a language would train bytes alone and call it a result.
    emptied = [f"{lang} [{name}]" for (lang, name), found in stats.items()
               if found.chunks and not found.kept_chunks]
    if emptied:
        raise RunError(f"min_chunk_count {floor:,} keeps none of the chunks of "
                       f"{', '.join(emptied)}: no chunk is counted that often in the sample; "
                       "give a smaller floor")
    record_training(db, run_id, {
        "source": plan.source.name, "fingerprint": plan.source.fingerprint, "seed": plan.seed,
        "mix": plan.mix, "train_bytes": resolved.settings.train_bytes, "min_chunk_count": floor,
        "languages": [{**taken[lang], "chunks": {
            name: dataclasses.asdict(stats[(lang, name)]) for name in splitters}}
            for lang in plan.languages]})
    return SourceTables({key: str(path) for key, path in tables.items()},
                        {lang: taken[lang]["bytes"] for lang in plan.languages},
                        list(plan.languages), resolved.settings.min_chunk_count)


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
