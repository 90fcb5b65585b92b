"""The builders of a run's vocabularies, one module per way of building one, each registered
(`analyzer.runs.registry`) under the kinds it builds (`KINDS`).

- Job builders (`bpe`, `parity`, `superbpe`, `library`; `registry.JobBuilder`): what they
  build is a job, trained wherever jobs run. Each has `plans(run)`, the jobs a run asks of it;
  `build(job, report)`, the record of one; and may have `combine(records)`, which joins
  records before the run stores them.
- Local builders (`extension`, `production`, `imported`; `registry.LocalBuilder`): made in the
  command's own process after the jobs, where a production tokenizer's library is loaded once:
  `records(run, texts, report, source, spread)`.

Each checks the settings it owns (`check`). The functions below are what the executors ask of
all of them, each optional hook read with its default (`registry.Hooks`); none names a kind.
Adding a kind of vocabulary is its `KindSpec` registered, a builder registered, and its
sections (`analyzer.metrics.sections`), if it has results of its own: a plug-in does it from
outside the package (see `analyzer.runs.registry`).
"""

from __future__ import annotations

from analyzer.bpe.pretokenize import Splitter
from analyzer.bpe.pretokenize import resolve as resolve_pretokenizer
from analyzer.store import VocabularyRecord

from ..costs import LocalTraining
from ..plan import JobPlan, Report, SourceTables, VocabularyJob
from ..registry import Hooks, builder_of, hook, job_builders, local_builders, register
from ..resolved import ResolvedRun
from ..spread import Spread
from . import bpe, extension, imported, library, parity, production, superbpe

# One call each, so that the type checker holds each module to its protocol.
register(bpe)
register(parity)
register(superbpe)
register(library)
register(extension)
register(production)
register(imported)
# The plug-ins are loaded when a run starts (`execute_run`), not here: a plug-in imports the
# faces it draws in (the terminal's and the report's views), which may be importing this.


def default_place(plan: JobPlan, run: ResolvedRun, rank: int) -> tuple:
    """Where a job goes among the run's (after its pre-tokenizer): the vocabularies on every
    language before each language's own, then by builder, then SuperBPE's transitions."""
    identity = plan.identity
    language = -1 if identity.language is None else run.languages.index(identity.language)
    return (0, language, rank, identity.transition or 0)


def make_plans(run: ResolvedRun, source: SourceTables | None = None) -> list[JobPlan]:
    """Every job of the run, in the order its vocabularies are listed: per pre-tokenizer, the
    BPE vocabularies on every language (shared, parity-aware, SuperBPE by transition), then
    each language's BPE vocabularies (its own, then its SuperBPE ones), then the other
    algorithms' (by algorithm, size, every language then each one: `library.place`). With
    `source`, each job trains on it."""
    planned = []
    for rank, builder in enumerate(job_builders()):
        place = hook(builder, "place", Hooks.place)
        for plan in builder.plans(run):
            where = place(plan, run) or default_place(plan, run, rank)
            planned.append(((run.pretokenizers.index(plan.pretokenizer), *where), plan))
    plans = [plan for _, plan in sorted(planned, key=lambda item: item[0])]
    return plans if source is None else [plan.trained_on(source) for plan in plans]


def build_vocabulary(job: VocabularyJob, report: Report | None = None) -> VocabularyRecord:
    """Build one job's vocabulary with the builder of its kind."""
    return builder_of(job.kind).build(job, report)


def combine(records: list[VocabularyRecord]) -> list[VocabularyRecord]:
    """The jobs' records as the run stores them (each builder joining its own, if it must)."""
    for builder in job_builders():
        records = hook(builder, "combine", Hooks.combine)(records)
    return records


def local_records(run: ResolvedRun, texts: dict[str, list[str]], report: Report | None = None,
                  source: SourceTables | None = None, spread: Spread | None = None
                  ) -> list[VocabularyRecord]:
    """The records of the vocabularies made by the local builders, after the jobs (trained on
    `source`, where they train; their tasks spread by `spread`, default this process's
    threads)."""
    return [record for builder in local_builders()
            for record in builder.records(run, texts, report, source, spread)]


def local_costs(run: ResolvedRun) -> list[LocalTraining]:
    """What the trainings made in this process after the jobs cost (`analyzer.runs.memory`),
    as the local builders that train name them (`local_costs(run)`)."""
    return [training for builder in local_builders()
            for training in hook(builder, "local_costs", Hooks.local_costs)(run)]


def run_splitters(run: ResolvedRun) -> dict[str, Splitter | None]:
    """Every pre-tokenizer the run's trainings cut a training source's text with, by name:
    the run's own, and those its builders need beside (SuperBPE's second stage, each extended
    tokenizer's own)."""
    found: dict[str, Splitter | None] = {name: resolve_pretokenizer(name)
                                         for name in run.pretokenizers}
    for builder in (*job_builders(), *local_builders()):
        found.update(hook(builder, "splitters", Hooks.splitters)(run))
    return found


__all__ = ["build_vocabulary", "combine", "local_costs", "local_records", "make_plans",
           "run_splitters"]
