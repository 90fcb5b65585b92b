"""The parity-aware vocabulary (Foroutan et al. 2025): BPE on every language where each merge is
the most frequent pair of the language that compresses worst so far (judged on the training
units, or the held-out ones), after `global_merges` ordinary shared merges (the hybrid). The
engine trains it (`bpe` builds it, in parity mode); this module says when a run has one."""

from __future__ import annotations

from analyzer.errors import SETTING, setting
from analyzer.identity import VocabKind, VocabularyId
from analyzer.settings import RunSettings

from .. import costs
from ..costs import Stage
from ..errors import RunError
from ..plan import JobPlan, pretokenizer_name
from ..resolved import ResolvedRun
from .bpe import build
from .common import new_plan

KINDS = (VocabKind.PARITY,)

__all__ = ["KINDS", "build", "check", "plans", "stages"]


def plans(run: ResolvedRun) -> list[JobPlan]:
    """Per pre-tokenizer, with `parity`: one on every language."""
    if not run.sizes or not run.settings.parity:
        return []
    return [new_plan(run, VocabularyId.parity(), run.languages, run.languages, pretokenizer)
            for pretokenizer in run.pretokenizers]


def stages(plan: JobPlan) -> list[Stage]:
    """What its training costs (`analyzer.runs.memory`): judged on the measured units, the
    engine takes its chunks as a list of strings."""
    return [Stage(costs.LISTED, pretokenizer_name(plan.pretokenizer), plan.sizes[-1] - 256)]


def check(settings: RunSettings, run: ResolvedRun, taken: set[str]) -> tuple[dict, dict]:
    """`parity` and `global_merges` against the run: the sizes to train, two languages."""
    languages, sizes = run.languages, run.sizes
    if settings.global_merges and not settings.parity:
        raise RunError(f"{SETTING} is for the parity-aware vocabulary: add {setting('parity')}",
                       setting="global_merges")
    if not settings.parity:
        return {}, {}
    if not sizes:
        raise RunError(f"{SETTING} trains a vocabulary: give {setting('sizes')} too (e.g. 4096)",
                       setting="parity")
    if len(languages) < 2:
        raise RunError(f"{SETTING} needs two languages or more: with one, it is the shared "
                       "vocabulary", setting="parity")
    return {}, {}
