"""Small statistics the metrics need: Gini, bootstrap weights, word counts.

>>> round(gini([1.0, 1.0, 1.0]), 6)
0.0
>>> round(gini([0.0, 0.0, 1.0]), 3)
0.667
"""

from __future__ import annotations

import numpy as np

from analyzer.corpus.languages import separates_words

__all__ = ["bootstrap_weights", "gini", "ginis", "separates_words"]


def gini(values) -> float:
    """Gini coefficient of non-negative values: 0 when all are equal, near 1 when one has all."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0 or x.sum() == 0:
        return 0.0
    ranks = np.arange(1, n + 1)
    return float((2 * (ranks * x).sum()) / (n * x.sum()) - (n + 1) / n)


def ginis(rows: np.ndarray) -> np.ndarray:
    """The Gini coefficient of each row of a matrix, all at once: each the same float as
    `gini(row)` (the same operations, each row sorted and summed along itself).

    >>> ginis(np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])).round(3).tolist()
    [0.0, 0.667, 0.0]
    """
    # each row contiguous (a transposed view would sort into columns), so that each row's
    # sums add in the order a vector's do: pairwise, as `gini` adds
    x = np.sort(np.ascontiguousarray(rows, dtype=float), axis=1)
    n = x.shape[1]
    if n == 0:
        return np.zeros(len(x))
    sums = x.sum(axis=1)
    ranks = np.arange(1, n + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        found = (2 * (ranks * x).sum(axis=1)) / (n * sums) - (n + 1) / n
    return np.where(sums == 0, 0.0, found)


def bootstrap_weights(n_units: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples x units) counts of how often each unit is drawn in each resample.

    A resample's total is then one matrix product, for every language at once.
    """
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=resamples)
