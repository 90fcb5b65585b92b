"""Metrics of a run as pandas frames: premium, byte premium, bytes and characters per token,
fertility, per-unit spread, bootstrap confidence intervals and the Gini of premiums.

    data = load_run_data(db, run_id)
    frame = language_metrics(data)   # one row per (vocab, size, lang)
"""

from .frames import (
                     RunData,
                     for_pretokenizer,
                     headline_vocabulary,
                     language_metrics,
                     load_run_data,
                     own_vocabulary,
                     tokenizer_sizes,
)
from .stats import gini, separates_words

__all__ = [
    "RunData",
    "for_pretokenizer",
    "gini",
    "headline_vocabulary",
    "language_metrics",
    "load_run_data",
    "own_vocabulary",
    "separates_words",
    "tokenizer_sizes",
]
