"""The verdicts (`analyzer.metrics.verdicts`): one definition of the cheapest, the fairest and
the frontier, which every face prints (issue 71)."""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from analyzer.metrics import gini, pareto_frontier
from analyzer.metrics.verdicts import verdicts

TOKENS = st.integers(1, 10**9)
PREMIUMS = st.lists(st.floats(0.2, 20.0), min_size=2, max_size=8)


def summaries_of(tokens: list[int], ginis: list[float], sizes: list[int] | None = None
                 ) -> pd.DataFrame:
    """Summaries of production tokenizers t0, t1, ... (one size each, unless `sizes`)."""
    n = len(tokens)
    frame = pd.DataFrame({"vocab": [f"t{k}" for k in range(n)], "pretokenizer": [None] * n,
                          "kind": ["production"] * n, "size": sizes or [1000] * n,
                          "tokens": tokens, "gini": ginis})
    frame["frontier"] = pareto_frontier(list(frame["tokens"].astype(float)), list(frame["gini"]))
    return frame


@given(st.lists(st.tuples(TOKENS, st.floats(0.0, 1.0)), min_size=2, max_size=12))
def test_the_cheapest_has_fewest_tokens_and_the_fairest_the_lowest_gini(pairs):
    tokens, ginis = [t for t, _ in pairs], [g for _, g in pairs]
    found = verdicts(summaries_of(tokens, ginis), ["words"])
    assert found.cheapest is not None and found.fairest is not None
    assert found.cheapest.tokens == min(tokens) and found.fairest.gini == min(ginis)
    assert [c.tokens for c in found.candidates] == sorted(tokens)
    on = {f"t{k}" for k, flag in enumerate(pareto_frontier([float(t) for t in tokens], ginis))
          if flag}
    assert {c.name for c in found.frontier} == on
    assert found.cheapest in found.frontier or any(c.tokens == found.cheapest.tokens
                                                   for c in found.frontier)
    rows = found.rows()
    assert rows["cheapest"].sum() == 1 and rows["fairest"].sum() == 1


@given(PREMIUMS, st.integers(0, 7))
def test_the_fairness_measure_does_not_change_with_the_reference_language(tokens, reference):
    """The Gini of premiums against any language is the Gini of the counts themselves: the
    verdict is the same whichever reference a face shows."""
    pivot = tokens[reference % len(tokens)]
    assert abs(gini([t / pivot for t in tokens]) - gini(tokens)) < 1e-9


def test_a_trained_vocabulary_is_a_candidate_at_its_largest_size_only():
    frame = summaries_of([500, 400, 450], [0.1, 0.2, 0.05], sizes=[256, 512, 100_000])
    frame.loc[:1, "vocab"] = "shared"
    frame.loc[:1, "kind"] = "shared"
    frame.loc[:1, "pretokenizer"] = "words"
    found = verdicts(frame, ["words"])
    assert [c.name for c in found.candidates] == ["shared 512", "t2"]
    assert found.cheapest.name == "shared 512" and found.fairest.name == "t2"
    said = found.sentences()
    assert said[0].startswith("The cheapest for these languages is shared 512: 400 tokens for "
                              "all of them, 11.1% fewer than t2.")
    assert said[1] == ("The fairest is t2: the Gini of its premiums is 0.050 (0: every "
                       "language pays the same).")


def test_one_candidate_has_no_verdict():
    found = verdicts(summaries_of([10], [0.0]), ["words"])
    assert found.cheapest is None and found.fairest is None and found.sentences() == []
    assert verdicts(summaries_of([], []), ["words"]).candidates == ()
