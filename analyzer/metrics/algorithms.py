"""BPE, Unigram and WordPiece side by side: each language's premium under each algorithm's
vocabulary trained on every language, at each size and pre-tokenizer of the run.

`algorithm_premiums` is long: one row per (pre-tokenizer, size, language, algorithm), with the
language's tokens, its premium (tokens over the pivot's under the same vocabulary) and its
tokens over BPE's (`vs_bpe`, minus 1). `by_script` sums the languages of each script, so that
the direction of a difference between algorithms is read per writing system.
"""

from __future__ import annotations

import pandas as pd

from analyzer.corpus.languages import script_name
from analyzer.identity import SHARED_SCOPE, Algorithm

from .data import RunData

ALGORITHM_COLUMNS = ["pretokenizer", "size", "lang", "script", "algorithm", "tokens", "premium",
                     "vs_bpe"]


def algorithm_premiums(data: RunData) -> pd.DataFrame:
    """Rows for every vocabulary trained on every language with one algorithm (BPE's shared,
    Unigram's and WordPiece's), at every size the run trained; empty when the run trained BPE
    only."""
    run = data.run
    if len(run.algorithms) < 2:
        return pd.DataFrame(columns=ALGORITHM_COLUMNS)
    every = {(v.scope, v.pretokenizer): v.kind.algorithm for v in data.vocabularies
             if v.kind.spec.plain and v.kind.trained_on_every_language}
    rows = []
    for (vocab, pretokenizer, size), by_lang in data.counts.items():
        algorithm = every.get((vocab, pretokenizer))
        if algorithm is None or run.pivot not in by_lang:
            continue
        bpe = data.counts.get((SHARED_SCOPE, pretokenizer, size), {})
        pivot = float(by_lang[run.pivot].sum())
        for lang in run.languages:
            if lang not in by_lang:
                continue
            tokens = int(by_lang[lang].sum())
            reference = int(bpe[lang].sum()) if lang in bpe else None
            rows.append({"pretokenizer": pretokenizer, "size": size, "lang": lang,
                         "script": script_name(lang), "algorithm": str(algorithm),
                         "tokens": tokens, "premium": tokens / pivot if pivot else None,
                         "vs_bpe": tokens / reference - 1 if reference else None})
    return pd.DataFrame(rows, columns=ALGORITHM_COLUMNS)


def by_script(premiums: pd.DataFrame) -> pd.DataFrame:
    """Per (pre-tokenizer, size, script, algorithm): the languages, their tokens summed, and
    those tokens over BPE's for the same languages (minus 1)."""
    if premiums.empty:
        return pd.DataFrame(columns=["pretokenizer", "size", "script", "algorithm", "languages",
                                     "tokens", "vs_bpe"])
    keys = ["pretokenizer", "size", "script"]
    grouped = (premiums.groupby([*keys, "algorithm"], sort=True)
               .agg(languages=("lang", "nunique"), tokens=("tokens", "sum")).reset_index())
    bpe = grouped[grouped["algorithm"] == str(Algorithm.BPE)][[*keys, "tokens"]]
    merged = grouped.merge(bpe, on=keys, how="left", suffixes=("", "_bpe"))
    merged["vs_bpe"] = merged["tokens"] / merged["tokens_bpe"] - 1
    return merged.drop(columns="tokens_bpe")
