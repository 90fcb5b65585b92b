"""The frontier of cost against fairness: which configurations no other beats on both.

A configuration (a vocabulary of a run at a size, or a production tokenizer) has a cost (the
tokens all measured languages take, relative to the run's reference configuration) and an
unfairness (the Gini of its premiums). It is on the Pareto frontier when no other configuration
costs no more and is no less fair with one of the two strictly better: the lowest cost for its
fairness.

>>> pareto_frontier([1.0, 0.9, 1.2, 0.9], [0.10, 0.20, 0.05, 0.25])
[True, True, True, False]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.identity import VocabKind

from .frames import tokenizer_label, tokenizer_models


def configuration_name(row: Mapping[str, Any]) -> str:
    """A configuration (a row of `summaries`) in words.

    >>> configuration_name({"kind": "shared", "vocab": "shared", "pretokenizer": "cl100k",
    ...                     "size": 4096})
    'shared [cl100k] at 4,096'
    >>> configuration_name({"kind": "production", "vocab": "gemma3", "size": 262145})
    'gemma3 (Gemma 3)'
    """
    kind = VocabKind(row["kind"])
    if kind.production:  # a catalog tokenizer by its models (the first: a name in a list)
        return (tokenizer_label(row["vocab"], short=True) if tokenizer_models(row["vocab"])
                else f"{row['vocab']} (production, {int(row['size']):,})")
    if kind.imported:
        return f"{row['vocab']} (imported)"
    if kind.extends:
        return f"{row['vocab']} +{int(row['added']):,}"
    split = "" if row["pretokenizer"] in (None, "none") else f" [{row['pretokenizer']}]"
    return f"{row['vocab']}{split} at {int(row['size']):,}"


def pareto_frontier(costs: Sequence[float], ginis: Sequence[float]) -> list[bool]:
    """For each point, whether no other point dominates it (lower or equal on both, lower on
    one). Equal points are all on it; a point with a NaN is never on it and dominates none.

    One sweep in order of cost: a point is on the frontier when its Gini is below every Gini
    of the strictly cheaper points and is the lowest among the points of its own cost."""
    points = [(c, g) for c, g in zip(costs, ginis)]
    comparable = [i for i, (c, g) in enumerate(points) if c == c and g == g]  # not NaN
    order = sorted(comparable, key=lambda i: points[i])
    on = [False] * len(points)
    cheaper_best = float("inf")  # the lowest Gini of the points cheaper than the current cost
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and points[order[end]][0] == points[order[start]][0]:
            end += 1
        same_cost = order[start:end]
        lowest = min(points[k][1] for k in same_cost)
        for k in same_cost:
            on[k] = points[k][1] == lowest < cheaper_best
        cheaper_best = min(cheaper_best, lowest)
        start = end
    return on
