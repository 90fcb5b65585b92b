"""Who a vocabulary serves, and what serving everyone costs.

- `summaries`: per vocabulary that counts every language (shared, parity-aware, production)
  and size, the Gini of the premiums across languages and the total tokens over all languages,
  and for a parity-aware one its total against the shared vocabulary's (what fairness costs in
  global compression), each with a seeded 95 % bootstrap interval over the measured units.
- `attribution`: for the vocabularies trained on every language (shared, parity-aware,
  SuperBPE), each language's share of the merges (the merges it contributed most of the
  replaced occurrences to, when they were learned; ties split), its share of all replaced
  occurrences, its share of the training bytes (weights applied), and its first merge (the
  rank of the first token its text uses).
- `equal_cost_sizes`: the smallest vocabulary size at which a language's text takes no more
  tokens than the pivot's at a reference size (Arnett et al. 2025): under the language's own
  vocabulary (against the pivot's own), and under each one trained on every language. Exact at
  every size, from the per-merge replacement counts of the measured units.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import nan

import numpy as np
import pandas as pd

from analyzer.identity import SHARED_SCOPE, VocabularyId

from .data import FairnessData, RunData
from .frames import RESAMPLES, headline_vocabulary
from .frontier import pareto_frontier
from .stats import gini, ginis

SUMMARY_COLUMNS = ["vocab", "pretokenizer", "kind", "algorithm", "size", "transition", "base",
                   "added",
                   "tokens", "cost", "cost_ci_low", "cost_ci_high", "gini", "gini_ci_low",
                   "gini_ci_high", "vs_shared", "vs_shared_ci_low", "vs_shared_ci_high",
                   "worst_lang", "worst_premium", "frontier"]


def summaries(data: RunData, resamples: int = RESAMPLES) -> pd.DataFrame:
    """Per configuration that counts every language (a vocabulary of the run at a size: shared,
    parity-aware, SuperBPE, an extension, Unigram, WordPiece; a production tokenizer at its
    size): its fields (`kind`, `algorithm`, `transition`, `base`, `added`), tokens over all
    languages, `cost` (those tokens over the run's reference configuration's:
    `headline_vocabulary`, the shared vocabulary at the largest size), the Gini of premiums,
    `vs_shared` (its tokens over the shared BPE vocabulary's of the same pre-tokenizer and
    size, minus 1, where there is one), each with its 95 % bootstrap interval; the language it
    charges most and that premium; and whether it is on the frontier of cost against Gini
    (`analyzer.metrics.frontier`)."""
    run = data.run
    boots = data.bootstrap_totals(resamples)
    rows = []
    totals: dict[tuple[str, str | None, int], np.ndarray] = {}
    vocabularies = {(v.scope, v.pretokenizer): v for v in data.vocabularies}
    for (vocab, pretokenizer, size), by_lang in data.counts.items():
        kind = data.kind(vocab, pretokenizer)
        if not kind.counts_every_language or run.pivot not in by_lang:
            continue
        stored = vocabularies[(vocab, pretokenizer)]
        langs = [lang for lang in run.languages if lang in by_lang]
        boot = boots[(vocab, pretokenizer, size)]  # langs x resamples
        premiums = boot / boot[langs.index(run.pivot)]
        boot_gini = ginis(premiums.T)  # each resample's
        whole = data.totals((vocab, pretokenizer, size), langs)
        premium = whole / whole[langs.index(run.pivot)]
        totals[(vocab, pretokenizer, size)] = boot.sum(axis=0)
        rows.append({
            "vocab": vocab, "pretokenizer": pretokenizer, "kind": kind,
            "algorithm": kind.algorithm, "size": size, "transition": stored.identity.transition,
            "base": stored.identity.name if kind.extends else None,
            "added": size - stored.base_size if stored.base_size is not None else None,
            "tokens": int(whole.sum()), "gini": gini(premium),
            "gini_ci_low": nan if data.joined_counts else float(np.percentile(boot_gini, 2.5)),
            "gini_ci_high": nan if data.joined_counts else float(np.percentile(boot_gini, 97.5)),
            "worst_lang": langs[int(np.argmax(premium))], "worst_premium": float(premium.max()),
        })
    frame = pd.DataFrame(rows, columns=[c for c in SUMMARY_COLUMNS if c not in (
        "cost", "cost_ci_low", "cost_ci_high", "vs_shared", "vs_shared_ci_low",
        "vs_shared_ci_high", "frontier")])
    for column in ("cost", "cost_ci_low", "cost_ci_high", "vs_shared", "vs_shared_ci_low",
                   "vs_shared_ci_high"):
        frame[column] = float("nan")
    frame["frontier"] = False
    if frame.empty:
        return frame[SUMMARY_COLUMNS]
    reference = headline_vocabulary(run, data.vocabularies)
    keys = [(row["vocab"], row["pretokenizer"], row["size"]) for row in rows]  # None, not NaN
    point = dict(zip(keys, frame["tokens"].astype(float)))

    def relative(key: tuple, against: tuple) -> tuple[float, float, float]:
        """Tokens over another configuration's, with its bootstrap interval."""
        if data.joined_counts:  # one text per language: no interval
            return point[key] / point[against], nan, nan
        ratios = totals[key] / totals[against]
        return (point[key] / point[against], float(np.percentile(ratios, 2.5)),
                float(np.percentile(ratios, 97.5)))

    for index, key in zip(frame.index, keys):
        if reference in totals:
            frame.loc[index, ["cost", "cost_ci_low", "cost_ci_high"]] = relative(key, reference)
        shared = (SHARED_SCOPE, key[1], key[2])
        if shared in totals and key != shared:
            frame.loc[index, ["vs_shared", "vs_shared_ci_low", "vs_shared_ci_high"]] = \
                [value - 1 for value in relative(key, shared)]
    frame["frontier"] = pareto_frontier(list(frame["cost"]), list(frame["gini"]))
    return frame[SUMMARY_COLUMNS]


def attribution(data: RunData) -> pd.DataFrame:
    """Per (vocab, pretokenizer, lang) of the vocabularies trained on every language: merges_share,
    occurrences_share, bytes_share, first_merge (1-based rank; None if its text uses no merge)
    and, parity-aware, chosen_share (the merges chosen for it)."""
    fairness = _fairness(data)
    weights = data.run.weights
    byte_total = sum(fairness.train_bytes[lang] * weights.get(lang, 1) for lang in fairness.train_bytes)
    rows = []
    for (vocab, pretokenizer), by_lang in fairness.trained.items():
        if not data.kind(vocab, pretokenizer).trained_on_every_language:
            continue
        langs = [lang for lang in data.run.languages if lang in by_lang]
        replaced = np.array([by_lang[lang] for lang in langs], dtype=float)  # langs x merges
        n_merges = replaced.shape[1]
        top = replaced.max(axis=0) if n_merges else np.zeros(0)
        leaders = (replaced == top) & (top > 0)
        merge_share = (leaders / np.maximum(leaders.sum(axis=0), 1)).sum(axis=1) / max(n_merges, 1)
        occurrences = replaced.sum(axis=1)
        chosen = fairness.chosen.get((vocab, pretokenizer))
        for i, lang in enumerate(langs):
            used = np.flatnonzero(replaced[i])
            rows.append({
                "vocab": vocab, "pretokenizer": pretokenizer, "lang": lang,
                "merges_share": float(merge_share[i]),
                "occurrences_share": float(occurrences[i] / occurrences.sum()) if occurrences.sum() else 0.0,
                "bytes_share": fairness.train_bytes[lang] * weights.get(lang, 1) / byte_total
                if byte_total else 0.0,
                "first_merge": int(used[0]) + 1 if used.size else None,
                "chosen_share": sum(1 for c in chosen if c == lang) / len(chosen)
                if chosen else None,
            })
    return pd.DataFrame(rows, columns=["vocab", "pretokenizer", "lang", "merges_share",
                                       "occurrences_share", "bytes_share", "first_merge",
                                       "chosen_share"])


def token_curve(n_bytes: int, replaced: list[int]) -> np.ndarray:
    """Tokens after each number of merges: `curve[k]` is the count at size 256 + k.

    >>> token_curve(10, [3, 0, 2]).tolist()
    [10, 7, 7, 5]
    """
    return n_bytes - np.concatenate([[0], np.cumsum(replaced, dtype=np.int64)])


def _first_at_most(curve: np.ndarray, target: float) -> int | None:
    """The smallest size whose token count is at most `target`, or None."""
    hits = np.flatnonzero(curve <= target)
    return 256 + int(hits[0]) if hits.size else None


def _at_size(curve: np.ndarray, size: int) -> int:
    return int(curve[min(size - 256, len(curve) - 1)])


def equal_cost_sizes(data: RunData, reference_size: int | None = None) -> list[dict]:
    """`[{"lang", "vocab", "pretokenizer", "reference_size", "size"}]`: for each language, the
    smallest size at which its tokens are no more than the pivot's at `reference_size`
    (default: the run's largest): under its own vocabulary (`vocab` is the language's code;
    the pivot's own is the reference) and under each vocabulary trained on every language.
    `size` is None when no size within the trained merges reaches it."""
    run = data.run
    if not run.sizes:
        return []
    fairness = _fairness(data)
    reference = reference_size or max(run.sizes)
    pivot = run.pivot
    n_bytes = {lang: int(data.unit_bytes[lang].sum()) for lang in run.languages}
    found = []
    for pretokenizer in run.pretokenizers:
        pivot_own = fairness.measured.get((pivot, pretokenizer), {}).get(pivot)
        if pivot_own is not None:
            target = _at_size(token_curve(n_bytes[pivot], pivot_own), reference)
            for lang in run.languages:
                own = fairness.measured.get((lang, pretokenizer), {}).get(lang)
                if own is not None:
                    found.append({"lang": lang, "vocab": lang, "pretokenizer": pretokenizer,
                                  "reference_size": reference,
                                  "size": _first_at_most(token_curve(n_bytes[lang], own), target)})
        every = [v.scope for v in data.vocabularies
                 if v.kind.trained_on_every_language and v.pretokenizer == pretokenizer]
        for vocab in every:
            by_lang = fairness.measured.get((vocab, pretokenizer))
            if not by_lang or pivot not in by_lang:
                continue
            target = _at_size(token_curve(n_bytes[pivot], by_lang[pivot]), reference)
            for lang in run.languages:
                if lang in by_lang:
                    found.append({"lang": lang, "vocab": str(vocab), "pretokenizer": pretokenizer,
                                  "reference_size": reference,
                                  "size": _first_at_most(token_curve(n_bytes[lang], by_lang[lang]),
                                                         target)})
    return found


def _fairness(data: RunData) -> FairnessData:
    if data.fairness is None:
        raise ValueError("the run's data was loaded without its fairness data "
                         "(load_run_data(..., fairness=True))")
    return data.fairness


def superbpe_effects(data: RunData) -> list[dict]:
    """`[{"vocab", "pretokenizer", "transition", "lang", "size", "premium", "shared_premium",
    "premium_before", "before_size", "superword_share"}]`: for each SuperBPE vocabulary and
    language, at the run's largest size, its premium (tokens / the pivot's) beside the shared
    vocabulary's (same pre-tokenizer), its premium at the largest run size up to the transition
    (`before_size`; None when no size is that small), and the share of its tokens there that
    are superwords (span words)."""
    run = data.run
    fairness = _fairness(data)
    if not run.sizes:
        return []
    largest = max(run.sizes)

    def premiums(vocab: str, pretokenizer: str | None, size: int) -> dict[str, float]:
        by_lang = data.counts.get((vocab, pretokenizer, size), {})
        if run.pivot not in by_lang:
            return {}
        pivot = float(by_lang[run.pivot].sum())
        return {lang: float(units.sum()) / pivot for lang, units in by_lang.items()}

    found = []
    for v in data.vocabularies:
        transition = v.identity.transition  # T, as the run asked (the stored one is where
        if not (v.kind.two_stages and v.kind.trained_on_every_language) or transition is None:
            continue  # (stage 2 really started)
        before = [size for size in run.sizes if size <= transition]
        before_size = max(before) if before else None
        after = premiums(v.scope, v.pretokenizer, largest)
        shared = premiums(SHARED_SCOPE, v.pretokenizer, largest)
        earlier = premiums(v.scope, v.pretokenizer, before_size) if before_size else {}
        superwords = fairness.superwords.get((v.scope, v.pretokenizer), set())
        histograms = fairness.histograms.get((v.scope, v.pretokenizer, largest), {})
        for lang in run.languages:
            histogram: Mapping[int, int] = histograms.get(lang, {})
            total = sum(histogram.values())
            found.append({
                "vocab": v.scope, "pretokenizer": v.pretokenizer, "transition": transition,
                "lang": lang, "size": largest, "premium": after.get(lang),
                "shared_premium": shared.get(lang), "premium_before": earlier.get(lang),
                "before_size": before_size,
                "superword_share": (sum(n for token, n in histogram.items() if token in superwords)
                                    / total) if total else None,
            })
    return found


def own_superbpe_effects(data: RunData) -> list[dict]:
    """`[{"transition", "pretokenizer", "lang", "size", "premium", "own_premium",
    "premium_before", "before_size", "tokens_change", "superword_share"}]`: for each transition
    and language with its own SuperBPE vocabulary, at the run's largest size, its premium with
    its own SuperBPE vocabulary against the pivot's own SuperBPE vocabulary, beside the same with
    the own ordinary vocabularies (`own_premium`), the premium at the largest run size up to the
    transition (`before_size`: stage 1, the own vocabulary's prefix), how much its own tokens
    change (SuperBPE's over the ordinary vocabulary's, minus 1), and the share of its tokens
    that are superwords."""
    run = data.run
    fairness = _fairness(data)
    if not run.sizes:
        return []
    largest = max(run.sizes)

    def tokens(vocab: str, pretokenizer: str | None, size: int, lang: str) -> float | None:
        units = data.counts.get((vocab, pretokenizer, size), {}).get(lang)
        return None if units is None else float(units.sum())

    def premium(vocab_of, pretokenizer: str | None, size: int, lang: str) -> float | None:
        mine, pivot = tokens(vocab_of(lang), pretokenizer, size, lang), \
            tokens(vocab_of(run.pivot), pretokenizer, size, run.pivot)
        return None if mine is None or not pivot else mine / pivot

    found = []
    for v in data.vocabularies:
        if not (v.kind.two_stages and v.kind.trained_on_one_language) or v.identity.transition is None:
            continue
        lang = v.identity.language
        assert lang is not None
        transition = v.identity.transition  # T as asked: every language's scope names it

        def scope(code: str, t: int = transition) -> str:
            return VocabularyId.superbpe(t, code).scope

        before = [size for size in run.sizes if size <= transition]
        before_size = max(before) if before else None
        own = tokens(lang, v.pretokenizer, largest, lang)
        superbpe = tokens(v.scope, v.pretokenizer, largest, lang)
        superwords = fairness.superwords.get((v.scope, v.pretokenizer), set())
        histogram: Mapping[int, int] = fairness.histograms.get(
            (v.scope, v.pretokenizer, largest), {}).get(lang, {})
        total = sum(histogram.values())
        found.append({
            "transition": transition, "pretokenizer": v.pretokenizer, "lang": lang,
            "size": largest, "premium": premium(scope, v.pretokenizer, largest, lang),
            "own_premium": premium(lambda code: code, v.pretokenizer, largest, lang),
            "premium_before": premium(scope, v.pretokenizer, before_size, lang)
            if before_size else None,
            "before_size": before_size,
            "tokens_change": superbpe / own - 1 if own and superbpe is not None else None,
            "superword_share": (sum(n for token, n in histogram.items() if token in superwords)
                                / total) if total else None,
        })
    return found
