"""What every builder shares: a plan for a vocabulary of a run, and which languages a
language's own counts."""

from __future__ import annotations

from analyzer.identity import VocabKind, VocabularyId

from ..plan import JobPlan
from ..resolved import ResolvedRun


def new_plan(run: ResolvedRun, identity: VocabularyId, train_on: list[str], count: list[str],
             pretokenizer: str, sizes: list[int] | None = None) -> JobPlan:
    """The job that builds `identity` for `run`: the training mix (`weights`) is that of the
    vocabularies trained on every language (a language's own is its alone); a parity-aware
    one takes the global merges, and with a holdout the held-out units decide whose turn it is."""
    settings = run.settings
    everyone = not identity.kind.trained_on_one_language
    parity = identity.kind == VocabKind.PARITY
    return JobPlan(
        identity, train_on, count, run.train_units, run.measured_units, sizes or run.sizes,
        settings.tie_break, settings.min_pair_count, pretokenizer,
        weights=run.weights if everyone else {},
        global_merges=settings.global_merges if parity else 0, judged=parity,
        dev_measured=parity and bool(settings.holdout), joined_ids=run.joined_ids)


def counted_by(run: ResolvedRun, lang: str) -> list[str]:
    """The languages a language's own vocabulary counts: itself and the pivot, or every one
    (`cross`)."""
    return run.languages if run.settings.cross else list(dict.fromkeys([lang, run.pivot]))
