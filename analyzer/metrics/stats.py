"""Small statistics the metrics need: Gini, bootstrap weights, word counts.

>>> round(gini([1.0, 1.0, 1.0]), 6)
0.0
>>> round(gini([0.0, 0.0, 1.0]), 3)
0.667
"""

from __future__ import annotations

import numpy as np

from analyzer.corpus.languages import separates_words

__all__ = ["bootstrap_weights", "gini", "separates_words"]


def gini(values) -> float:
    """Gini coefficient of non-negative values: 0 when all are equal, near 1 when one has all."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0 or x.sum() == 0:
        return 0.0
    ranks = np.arange(1, n + 1)
    return float((2 * (ranks * x).sum()) / (n * x.sum()) - (n + 1) / n)


def bootstrap_weights(n_units: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples x units) counts of how often each unit is drawn in each resample.

    A resample's total is then one matrix product, for every language at once.
    """
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=resamples)
