"""What extending a production tokenizer does to each language: its premium against the pivot
at every number of added tokens, and how many added tokens bring it within reach of the pivot.

An extension's measured replacements give each language's tokens after every added merge
(`tokens(k) = tokens(0) - replaced[0] - ... - replaced[k-1]`, k added tokens), so its premium
`tokens_L(k) / tokens_pivot(k)` is known at every k, not only at the stored sizes: the added
tokens a language needs are exact, the first k at which its premium is at most the goal (1.10:
within 10 % of the pivot; and the run's `target`), or None when no trained addition gets there.

>>> reach(np.array([30, 20, 12, 11]), np.array([10, 10, 10, 10]), 1.10)
3
>>> reach(np.array([30, 20]), np.array([10, 10]), 1.10) is None
True
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.store import VocabularyRead

from .data import RunData
from .fairness import token_curve

WITHIN = 1.10
"""The reach every extension reports: within 10 % of the pivot's tokens."""


def reach(tokens: np.ndarray, pivot: np.ndarray, goal: float) -> int | None:
    """The fewest added tokens at which `tokens / pivot` is at most `goal` (curves over the
    number of added tokens, from 0); None when none is."""
    hits = np.flatnonzero(tokens <= goal * pivot)
    return int(hits[0]) if hits.size else None


def extension_effects(data: RunData) -> pd.DataFrame:
    """One row per (extension, added size, language) of the stored sizes, the base (+0)
    included: `vocab, base, added, lang, tokens, premium, base_premium, trained_on`."""
    rows = []
    run = data.run
    trained_on = set(run.extend_langs or run.languages)
    for v in data.vocabularies:
        if not v.kind.extends or v.base_size is None:
            continue
        base_counts = data.counts.get((v.scope, v.pretokenizer, v.base_size), {})
        if run.pivot not in base_counts:
            continue
        base_pivot = float(base_counts[run.pivot].sum())
        for (scope, pretokenizer, size), by_lang in sorted(data.counts.items(),
                                                           key=lambda item: item[0][2]):
            if (scope, pretokenizer) != (v.scope, v.pretokenizer):
                continue
            pivot = float(by_lang[run.pivot].sum())
            for lang in run.languages:
                tokens = float(by_lang[lang].sum())
                rows.append({
                    "vocab": v.scope, "base": v.identity.name, "added": size - v.base_size,
                    "lang": lang, "tokens": int(tokens), "premium": tokens / pivot,
                    "base_premium": float(base_counts[lang].sum()) / base_pivot,
                    "trained_on": lang in trained_on,
                })
    return pd.DataFrame(rows, columns=["vocab", "base", "added", "lang", "tokens", "premium",
                                       "base_premium", "trained_on"])


def extension_curves(data: RunData, vocabulary: VocabularyRead) -> dict[str, np.ndarray]:
    """`{lang: tokens with 0, 1, ... every added token}` of an extension, from its base counts
    and the per-merge replacements in the measured units; empty when they are not stored."""
    assert data.fairness is not None, "load_run_data(..., fairness=True)"
    base_counts = data.counts.get((vocabulary.scope, vocabulary.pretokenizer,
                                   vocabulary.base_size or 0), {})
    replaced = data.fairness.measured.get((vocabulary.scope, vocabulary.pretokenizer), {})
    return {lang: token_curve(int(base_counts[lang].sum()), replaced[lang])
            for lang in data.run.languages if lang in base_counts and lang in replaced}


def extension_reach(data: RunData) -> pd.DataFrame:
    """One row per (extension, language): its premium with the base and with every trained
    addition, and the added tokens that bring it within 10 % of the pivot (`to_within`) and to
    the run's target (`to_target`), exact from the per-merge replacements; None when no
    trained addition does (0 when the base already does). `pivot_change` is the pivot's own
    tokens with every addition over its tokens with the base (English barely moves)."""
    run = data.run
    rows = []
    for v in data.vocabularies:
        if not v.kind.extends or v.base_size is None:
            continue
        curves = extension_curves(data, v)
        if run.pivot not in curves:
            continue
        pivot = curves[run.pivot]
        for lang, curve in curves.items():
            rows.append({
                "vocab": v.scope, "lang": lang, "merges": len(curve) - 1,
                "base_premium": curve[0] / pivot[0], "premium": curve[-1] / pivot[-1],
                "tokens_change": curve[-1] / curve[0] - 1,
                "to_within": reach(curve, pivot, WITHIN),
                "to_target": reach(curve, pivot, run.target) if run.target else None,
                "pivot_change": pivot[-1] / pivot[0] - 1,
                "trained_on": lang in (run.extend_langs or run.languages),
            })
    frame = pd.DataFrame(rows, columns=["vocab", "lang", "merges", "base_premium", "premium",
                                        "tokens_change", "to_within", "to_target",
                                        "pivot_change", "trained_on"])
    return frame.astype({"to_within": "Int64", "to_target": "Int64"})
