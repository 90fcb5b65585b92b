"""What the production tokenizers' vocabularies are made of (stored by the run, computed by
`analyzer.external.vocabulary`): each one's tokens by script, and how much of each other's
vocabulary two of them share (the Jaccard index, as Arnett et al. 2024 compare vocabularies)."""

from __future__ import annotations

import pandas as pd

from .data import RunData

SCRIPT_COLUMNS = ["tokenizer", "script", "tokens", "share"]
OVERLAP_COLUMNS = ["tokenizer", "other", "shared", "either", "jaccard"]


def vocabulary_scripts(data: RunData) -> pd.DataFrame:
    """One row per (production tokenizer, script): its tokens in that script and their share
    of its vocabulary's ordinary tokens, the largest first."""
    rows = []
    for tokenizer, scripts in data.vocabulary_scripts.items():
        total = sum(scripts.values())
        rows += [{"tokenizer": tokenizer, "script": script, "tokens": tokens,
                  "share": tokens / total} for script, tokens in scripts.items()]
    return pd.DataFrame(rows, columns=SCRIPT_COLUMNS)


def vocabulary_overlaps(data: RunData) -> pd.DataFrame:
    """One row per pair of production tokenizers: the tokens both have, those either has, and
    the Jaccard index (the first over the second)."""
    rows = [{"tokenizer": left, "other": right, "shared": shared, "either": either,
             "jaccard": shared / either if either else float("nan")}
            for left, right, shared, either in data.vocabulary_overlaps]
    return pd.DataFrame(rows, columns=OVERLAP_COLUMNS)
