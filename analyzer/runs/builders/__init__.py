"""The builders of a run's vocabularies, one module per way of building one, each registered
under the kinds it builds (`KINDS`).

- Job builders (`JOB_BUILDERS`): what they build is a job, trained wherever jobs run (this
  process, the local pool's processes, a Dask worker). Each has `plans(run)`, the jobs a run
  asks of it; `build(job, report)`, the record of one; and may have `combine(records)`, which
  joins records before the run stores them.
- Local builders (`LOCAL_BUILDERS`): made in the command's own process after the jobs, where a
  production tokenizer's library is loaded once: `records(run, texts, report)`.

The executors look a job's builder up by its kind (`build_vocabulary`) and never name one.
Adding a kind of vocabulary is a module here, listed below, and its sections
(`analyzer.metrics.sections`).
"""

from __future__ import annotations

from dataclasses import replace

from analyzer.identity import Algorithm, VocabKind
from analyzer.store import VocabularyRecord

from ..plan import JobPlan, Report, SourceTables, VocabularyJob
from ..resolution import ResolvedRun
from . import bpe, extension, imported, library, parity, production, superbpe

JOB_BUILDERS = (bpe, parity, superbpe, library)
"""In the order of a run's vocabularies (see `make_plans`)."""
LOCAL_BUILDERS = (extension, production, imported)
"""In the order their records follow the jobs'."""

BUILDER_OF = {kind: module for module in JOB_BUILDERS for kind in module.KINDS}


def make_plans(run: ResolvedRun, source: SourceTables | None = None) -> list[JobPlan]:
    """Every job of the run, in the order its vocabularies are listed: per pre-tokenizer, the
    BPE vocabularies on every language (shared, parity-aware, SuperBPE by transition), then
    each language's BPE vocabularies (its own, then its SuperBPE ones), then the other
    algorithms' (by algorithm, size, every language then each one). With `source`, each job
    trains on it (its parity-aware ones judged on the corpus)."""
    def position(plan: JobPlan, rank: int) -> tuple:
        identity = plan.identity
        where = run.pretokenizers.index(plan.pretokenizer)
        language = -1 if identity.language is None else run.languages.index(identity.language)
        algorithm = identity.algorithm
        assert algorithm is not None  # a job trains
        if algorithm != Algorithm.BPE:
            return (where, 1, run.algorithms.index(algorithm), plan.sizes[0], language)
        return (where, 0, language, rank, identity.transition or 0)

    planned = [(position(plan, rank), plan) for rank, module in enumerate(JOB_BUILDERS)
               for plan in module.plans(run)]
    plans = [plan for _, plan in sorted(planned, key=lambda item: item[0])]
    if source is not None:
        plans = [replace(plan, source=source, dev_measured=plan.kind == VocabKind.PARITY)
                 for plan in plans]
    return plans


def build_vocabulary(job: VocabularyJob, report: Report | None = None) -> VocabularyRecord:
    """Build one job's vocabulary with the builder of its kind."""
    return BUILDER_OF[job.kind].build(job, report)


def combine(records: list[VocabularyRecord]) -> list[VocabularyRecord]:
    """The jobs' records as the run stores them (each builder joining its own, if it must)."""
    for module in JOB_BUILDERS:
        joined = getattr(module, "combine", None)
        if joined is not None:
            records = joined(records)
    return records


def local_records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
                  source: SourceTables | None = None) -> list[VocabularyRecord]:
    """The records of the vocabularies made in this process, after the jobs (trained on
    `source`, where they train)."""
    return [record for module in LOCAL_BUILDERS
            for record in module.records(run, texts, report, source)]


def kinds_built() -> set[VocabKind]:
    """Every kind some builder builds (each exactly once: a test checks that it is every kind)."""
    return {kind for module in (*JOB_BUILDERS, *LOCAL_BUILDERS) for kind in module.KINDS}
