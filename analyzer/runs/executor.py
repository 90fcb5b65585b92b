"""Where a run's work runs: this machine (`LocalExecutor`) or a Dask cluster
(`cluster.DaskExecutor`), behind one protocol, `Executor`, so that a run picks one once
(`executor_for`) and never asks again which it has.

An executor does what differs between the two: train the jobs (`run`), count a training
source's sample (`count`), check that the trainings fit in memory before any of them starts
(`check_memory`), and share out a local builder's tasks (`spread`). Everything else a run does
(resolve, record, store) is the same on both, in `execute`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from analyzer.headroom import headroom
from analyzer.settings import ExecutorName
from analyzer.store import VocabularyRecord

from . import memory
from .chunk_cache import ChunkCache
from .costs import LocalTraining
from .counting import Progress, SourcePlan, Splitters, count_locally
from .plan import JobPlan, Report, SourceTables
from .pool import run_jobs
from .resolution import ResolvedRun
from .spread import Spread, ThreadSpread

Stage = Callable[[str], None]
"""Says what the run is doing now (a command's status line, the service's run record)."""

Counted = tuple[dict[tuple[str, str], Path], dict[str, dict]]
"""A counting pass's tables, by (language, pre-tokenizer name), and what each language took."""


@runtime_checkable
class Executor(Protocol):
    """What a run asks of where it runs."""

    def run(self, plans: list[JobPlan], texts: dict[str, list[str]],
            report: Report | None = None) -> list[VocabularyRecord]:
        """Every job's record, in plan order."""
        ...

    def count(self, plan: SourcePlan, splitters: Splitters, cache: ChunkCache,
              progress: Progress | None = None, stage: Stage | None = None) -> Counted:
        """The training source's sample counted (`counting`), from the cache where it can be."""
        ...

    def check_memory(self, plans: list[JobPlan], source: SourceTables,
                     local: Sequence[LocalTraining], stage: Stage, *, cached: bool,
                     sample: SourcePlan | None) -> None:
        """Say the trainings' predicted peak, and refuse the run (`memory.TooLittleMemory`)
        when they cannot fit where they run: the jobs where this executor runs them, the
        local trainings (`local`: an extension) in this process."""
        ...

    @property
    def spread(self) -> Spread:
        """Where a local builder's tasks run (a production tokenizer's measurement each)."""
        ...


class LocalExecutor:
    """This machine: the jobs in the local pool's processes (`pool`), up to `workers` at once;
    the counting on this process's threads; the local builders' tasks on `workers` threads."""

    def __init__(self, workers: int):
        self.workers = workers

    def run(self, plans: list[JobPlan], texts: dict[str, list[str]],
            report: Report | None = None) -> list[VocabularyRecord]:
        return run_jobs([plan.job(texts) for plan in plans], self.workers, report)

    def count(self, plan: SourcePlan, splitters: Splitters, cache: ChunkCache,
              progress: Progress | None = None, stage: Stage | None = None) -> Counted:
        return count_locally(plan, splitters, cache, progress, stage)

    def check_memory(self, plans: list[JobPlan], source: SourceTables,
                     local: Sequence[LocalTraining], stage: Stage, *, cached: bool,
                     sample: SourcePlan | None) -> None:
        """The jobs, `workers` at once, and the local trainings after them, against this
        process's headroom."""
        memory.check_memory(plans, self.workers, headroom(), stage, cached=cached, local=local,
                            sample=sample, source=source)

    @property
    def spread(self) -> Spread:
        return ThreadSpread(self.workers)


@contextlib.contextmanager
def executor_for(run: ResolvedRun, stage: Stage) -> Iterator[Executor]:
    """The run's executor, open for the run and closed after it. The dask executor connects
    (or starts a local cluster) before anything is written, so a scheduler that cannot be
    reached stores nothing; a run that sends nothing to a cluster (neither jobs nor production
    tokenizers to measure) stays here, and connects to nothing."""
    settings = run.settings
    if settings.executor == ExecutorName.DASK and (run.sizes or run.made.get("tokenizers")):
        from .cluster import connect  # Dask distributed, an extra: imported only when asked for

        stage("connecting to the Dask scheduler" if settings.scheduler
              else "starting a local Dask cluster")
        with connect(settings.scheduler, settings.jobs) as dask:
            yield dask
        return
    yield LocalExecutor(settings.jobs or os.cpu_count() or 1)
