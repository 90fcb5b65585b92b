"""Run an analysis end to end: resolve, record, build every vocabulary, store, mark."""

from __future__ import annotations

import os
import time

from sqlite_utils import Database

from analyzer import __version__
from analyzer.store import (FAILED, INTERRUPTED, VocabularyRecord, create_run, finish_run,
                            load_texts, mark_run, reap_stale_runs)

from .jobs import Report, VocabularyJob, run_jobs
from .settings import ResolvedRun, RunSettings, resolve

ENGINE_VERSION = f"analyzer {__version__} / analyzer.bpe exact greedy BPE"


def execute_run(db: Database, settings: RunSettings, report: Report | None = None,
                stage=None) -> int:
    """Do the run and return its id. Settings are checked first (RunError); once the run is
    recorded, a failure or Ctrl-C marks it failed or interrupted before re-raising, and no
    partial result is ever written."""
    stage = stage or (lambda message: None)
    reap_stale_runs(db)
    resolved = resolve(db, settings)
    run_id = create_run(
        db, corpus_id=resolved.corpus.corpus.id, languages=resolved.languages,
        pivot=resolved.pivot, sizes=resolved.sizes, per_language=settings.per_language,
        cross=settings.cross, holdout=settings.holdout, seed=settings.seed,
        measured_units=resolved.measured_units, tie_break=settings.tie_break,
        min_pair_count=settings.min_pair_count, engine_version=ENGINE_VERSION,
    )
    start = time.perf_counter()
    try:
        stage("loading texts")
        texts = load_texts(db, resolved.corpus.corpus.id, resolved.languages)
        jobs = make_jobs(resolved, texts)
        workers = settings.jobs or os.cpu_count() or 1
        records = run_jobs(jobs, workers, report)
        records += [measure_tokenizer(tokenizer, resolved, texts, report)
                    for tokenizer in resolved.tokenizers]
        stage("storing results")
        finish_run(db, run_id, records, round(time.perf_counter() - start, 3))
    except KeyboardInterrupt:
        mark_run(db, run_id, INTERRUPTED, "interrupted (Ctrl-C)")
        raise
    except BaseException as error:
        mark_run(db, run_id, FAILED, f"{type(error).__name__}: {error}")
        raise
    return run_id


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
    return VocabularyRecord(scope=tokenizer.name, kind="production", size=tokenizer.size,
                            counts={tokenizer.size: counts},
                            seconds=round(time.perf_counter() - start, 3),
                            library=tokenizer.library, source=tokenizer.source)


def make_jobs(run: ResolvedRun, texts: dict[str, list[str]]) -> list[VocabularyJob]:
    """The shared vocabulary counts every language; a per-language one counts its own
    language and the pivot, or every language with `cross`."""
    settings = run.settings

    def training(languages: list[str]) -> list[str]:
        return [texts[lang][u] for lang in languages for u in run.train_units]

    def measured(languages: list[str]) -> dict[str, list[str]]:
        return {lang: [texts[lang][u] for u in run.measured_units] for lang in languages}

    def job(scope: str, train_on: list[str], count: list[str]) -> VocabularyJob:
        return VocabularyJob(scope, training(train_on), measured(count), run.sizes,
                             settings.tie_break, settings.min_pair_count)

    if not run.sizes:  # production tokenizers only: nothing to train
        return []
    jobs = [job("shared", run.languages, run.languages)]
    if settings.per_language:
        for lang in run.languages:
            counted = run.languages if settings.cross else list(dict.fromkeys([lang, run.pivot]))
            jobs.append(job(lang, [lang], counted))
    return jobs
