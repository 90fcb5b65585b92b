"""The registry of builders: what builds each kind of vocabulary (`analyzer.identity.VocabKind`).

A builder is a module (or any object: a plug-in's `types.SimpleNamespace` will do) with the
kinds it builds, `KINDS`, and either

- `plans(run)` and `build(job, report)`: a job builder (`JobBuilder`). Its jobs are trained
  wherever jobs run (this process, the local pool's processes, a Dask worker); or
- `records(run, texts, report, source, spread)`: a local builder (`LocalBuilder`), made by the
  command's own process after the jobs (where a production tokenizer's library is loaded
  once); work it can share out it gives to `spread` (`runs.spread`: this process's threads,
  or the Dask cluster's workers), as production tokenizers are measured, one task each.

Those are the protocols a builder satisfies, structurally: nothing to inherit. Every other
hook is optional, and `Hooks` is the one place each is written down with what a builder
without it does (`hook(builder, name, default)` reads one): `MEASURED_ALONE`, `check`,
`splitters` of any builder; `place`, `combine` and `stages` of a job builder; `local_costs` of
a local builder.

The executors and the resolution look builders up here and never name a kind. A plug-in
registers its kind (`VocabKind.register`) and its builder (`register`); an installed package
does so from an entry point in the group `analyzer.kinds` (`identity.load_plugins`), loaded
with the built-in builders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from analyzer.identity import VocabKind

from . import costs
from .costs import LocalTraining, Stage
from .plan import JobPlan, Report, SourceTables, VocabularyJob, pretokenizer_name
from .resolved import ResolvedRun

if TYPE_CHECKING:  # for annotations only
    from analyzer.bpe.pretokenize import Splitter
    from analyzer.settings import RunSettings
    from analyzer.store import VocabularyRecord

    from .spread import Spread


class Builder(Protocol):
    """What every builder has."""

    @property
    def KINDS(self) -> Sequence[VocabKind]:  # noqa: N802 - a module's constant
        """The kinds it builds, each registered (`VocabKind.register`) and built by no other."""
        ...


@runtime_checkable
class JobBuilder(Builder, Protocol):
    """A builder whose vocabularies are jobs, trained wherever jobs run."""

    def plans(self, run: ResolvedRun) -> list[JobPlan]:
        """The jobs `run` asks of it (none is fine)."""
        ...

    def build(self, job: VocabularyJob, report: Report | None = None) -> VocabularyRecord:
        """One job's record: trained, then counted on every measured text at every size."""
        ...


@runtime_checkable
class LocalBuilder(Builder, Protocol):
    """A builder whose vocabularies are made in the command's own process, after the jobs."""

    def records(self, run: ResolvedRun, texts: dict[str, list[str]],
                report: Report | None = None, source: SourceTables | None = None,
                spread: Spread | None = None) -> list[VocabularyRecord]:
        """Its records (trained on `source`, where it trains; tasks shared out by `spread`)."""
        ...


class Hooks:
    """Every optional hook, as a builder without it has it: the one place a missing hook is
    filled in (read with `hook`)."""

    MEASURED_ALONE: Sequence[str] = ()
    """Settings that measure vocabularies without any size (`tokenizers`, `counts`, `extend`):
    a run of them alone is not "nothing to measure"."""

    @staticmethod
    def check(settings: RunSettings, run: ResolvedRun,
              taken: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The settings it owns checked against the run (`RunError` naming the setting),
        returning `(made, recorded)`: what it made of them (read back as `run.made[name]`) and
        how the run's row records them; `taken` is the set of scopes already used, to which it
        adds the names it takes. `run` is the run before any builder's `made`. Default: it
        owns no setting."""
        return {}, {}

    @staticmethod
    def splitters(run: ResolvedRun) -> dict[str, Splitter | None]:
        """The pre-tokenizers its trainings cut a training source with, beyond the run's own,
        by name. Default: none."""
        return {}

    @staticmethod
    def place(plan: JobPlan, run: ResolvedRun) -> tuple | None:
        """A job builder's: where a job goes in the run's list, a sort key after the job's
        pre-tokenizer. Default, None: where `builders.default_place` puts it (by language,
        then by builder)."""
        return None

    @staticmethod
    def combine(records: list[VocabularyRecord]) -> list[VocabularyRecord]:
        """A job builder's: the run's job records as the run stores them, its own joined if it
        must (the other algorithms' records of one training). Default: as they are."""
        return records

    @staticmethod
    def stages(plan: JobPlan) -> list[Stage] | None:
        """A job builder's: what a job's training costs in memory, each stage an engine's
        measured cost (`analyzer.runs.costs`) over the tables of a pre-tokenizer (by its
        `plan.pretokenizer_name`), so that `analyzer.runs.memory` predicts it before
        training; None: not predicted. Default: BPE's cost if its kind learns merges."""
        return [Stage(costs.TABLES, pretokenizer_name(plan.pretokenizer), plan.sizes[-1] - 256)] \
            if plan.kind.has_merges else None

    @staticmethod
    def local_costs(run: ResolvedRun) -> list[LocalTraining]:
        """A local builder's: what its trainings cost (`costs.LocalTraining`), predicted as
        a job's are. Default: it trains nothing."""
        return []


H = TypeVar("H")


def hook(builder: Builder, name: str, default: H) -> H:
    """The builder's hook `name`, or `default` (its `Hooks` member) where it has none."""
    return getattr(builder, name, default)


Registrable = TypeVar("Registrable", bound=JobBuilder | LocalBuilder)

BUILDERS: list[JobBuilder | LocalBuilder] = []
"""Every builder, job builders and local ones, in the order their vocabularies are listed
(and their settings checked)."""


def register(builder: Registrable) -> Registrable:
    """Add a builder (returned). Each of its kinds must be registered and built by no other."""
    kinds = getattr(builder, "KINDS", None)
    if not isinstance(kinds, (tuple, list)) or not kinds:
        raise TypeError(f"{builder!r} needs KINDS, the tuple of the kinds it builds (each "
                        f"registered with VocabKind.register), not {kinds!r}")
    if isinstance(builder, JobBuilder) == isinstance(builder, LocalBuilder):
        raise TypeError(f"{builder!r} needs plans and build (a job builder) or records (a local "
                        "builder), and not both")
    if builder in BUILDERS:
        return builder
    for kind in kinds:
        VocabKind(kind)  # registered
        if kind in kinds_built():
            raise ValueError(f"kind {kind} already has a builder")
    BUILDERS.append(builder)
    return builder


def unregister(builder: JobBuilder | LocalBuilder) -> None:
    if builder not in BUILDERS:
        raise ValueError(f"{builder!r} is not a registered builder")
    BUILDERS.remove(builder)


def job_builders() -> list[JobBuilder]:
    return [builder for builder in BUILDERS if isinstance(builder, JobBuilder)]


def local_builders() -> list[LocalBuilder]:
    return [builder for builder in BUILDERS if isinstance(builder, LocalBuilder)]


def builder_of(kind: VocabKind) -> JobBuilder:
    """The job builder of `kind`."""
    for builder in job_builders():
        if kind in builder.KINDS:
            return builder
    raise LookupError(f"no job builder builds {kind} vocabularies in this process (a plug-in's "
                      "kind is registered where its jobs run by its entry point)")


def kinds_built() -> set[VocabKind]:
    """Every kind some builder builds (each exactly once: a test checks that it is every kind)."""
    return {kind for builder in BUILDERS for kind in builder.KINDS}
