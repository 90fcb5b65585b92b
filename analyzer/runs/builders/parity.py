"""The parity-aware vocabulary (Foroutan et al. 2025): BPE on every language where each merge is
the most frequent pair of the language that compresses worst so far (judged on the training
units, or the held-out ones), after `global_merges` ordinary shared merges (the hybrid). The
engine trains it (`bpe` builds it, in parity mode); this module says when a run has one."""

from __future__ import annotations

from analyzer.identity import VocabKind, VocabularyId

from ..plan import JobPlan
from ..resolution import ResolvedRun
from .bpe import build
from .common import new_plan

KINDS = (VocabKind.PARITY,)

__all__ = ["KINDS", "build", "plans"]


def plans(run: ResolvedRun) -> list[JobPlan]:
    """Per pre-tokenizer, with `parity`: one on every language."""
    if not run.sizes or not run.settings.parity:
        return []
    return [new_plan(run, VocabularyId.parity(), run.languages, run.languages, pretokenizer)
            for pretokenizer in run.pretokenizers]
