"""The registry of builders: what builds each kind of vocabulary (`analyzer.identity.VocabKind`).

A builder is a module (or any object) with the kinds it builds, `KINDS`, and either

- `plans(run)` and `build(job, report)`: a job builder. Its jobs are trained wherever jobs
  run (this process, the local pool's processes, a Dask worker); it may have
  `combine(records)`, which joins its records before the run stores them, and
  `place(plan, run)`, where its jobs go in the run's list (default: `default_place`); or
- `records(run, texts, report, source, spread)`: a local builder, made by the command's own
  process after the jobs (where a production tokenizer's library is loaded once); work it can
  share out it gives to `spread` (`runs.spread`: this process's threads, or the Dask cluster's
  workers), as production tokenizers are measured, one task each.

A job builder may have `stages(plan)`: what its training costs in memory, each stage an
engine's measured cost (`analyzer.runs.costs`) over the tables of a pre-tokenizer (by its
`plan.pretokenizer_name`), so that `analyzer.runs.memory` predicts it before training (a
builder without it: BPE's cost if its kind learns merges, else not predicted); a local
builder that trains may have `local_costs(run)`, the same for its trainings
(`memory.LocalTraining`).

Either may have `check(settings, run, taken)`: the settings it owns checked against the run
(`RunError` naming the setting), returning `(made, recorded)`, what it made of them (read back as
`run.made[name]`) and how the run's row records them; `taken` is the set of scopes already used,
to which it adds the names it takes. And `splitters(run)`: the pre-tokenizers its trainings cut
a training source with, beyond the run's own.

The executors and the resolution look builders up here and never name a kind. A plug-in
registers its kind (`VocabKind.register`) and its builder (`register`); an installed package
does so from an entry point in the group `analyzer.kinds` (`identity.load_plugins`), loaded
with the built-in builders.
"""

from __future__ import annotations

from typing import Any

from analyzer.identity import VocabKind

BUILDERS: list[Any] = []
"""Every builder, job builders and local ones, in the order their vocabularies are listed
(and their settings checked)."""


def register(builder: Any) -> Any:
    """Add a builder (returned). Each of its kinds must be registered and built by no other."""
    job = hasattr(builder, "plans") and hasattr(builder, "build")
    if job == hasattr(builder, "records"):
        raise TypeError(f"{builder!r} needs plans and build (a job builder) or records (a local "
                        "builder), and not both")
    if builder in BUILDERS:
        return builder
    kinds = getattr(builder, "KINDS", None)
    if not isinstance(kinds, (tuple, list)) or not kinds:
        raise TypeError(f"{builder!r} needs KINDS, the tuple of the kinds it builds (each "
                        f"registered with VocabKind.register), not {kinds!r}")
    for kind in kinds:
        VocabKind(kind)  # registered
        if kind in kinds_built():
            raise ValueError(f"kind {kind} already has a builder")
    BUILDERS.append(builder)
    return builder


def unregister(builder: Any) -> None:
    if builder not in BUILDERS:
        raise ValueError(f"{builder!r} is not a registered builder")
    BUILDERS.remove(builder)


def job_builders() -> list[Any]:
    return [builder for builder in BUILDERS if not hasattr(builder, "records")]


def local_builders() -> list[Any]:
    return [builder for builder in BUILDERS if hasattr(builder, "records")]


def builder_of(kind: VocabKind) -> Any:
    """The job builder of `kind`."""
    for builder in job_builders():
        if kind in builder.KINDS:
            return builder
    raise LookupError(f"no job builder builds {kind} vocabularies in this process (a plug-in's "
                      "kind is registered where its jobs run by its entry point)")


def kinds_built() -> set[VocabKind]:
    """Every kind some builder builds (each exactly once: a test checks that it is every kind)."""
    return {kind for builder in BUILDERS for kind in builder.KINDS}
