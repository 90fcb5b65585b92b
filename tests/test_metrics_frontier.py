"""The frontier of cost against fairness: the marked set is exactly the configurations no other
dominates (checked against brute force on made-up points, ties and NaN included), and a run's
summaries give every configuration its cost against the reference, its Gini, its worst-charged
language and its place on the frontier, in `show`, `show --json` and the export."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.metrics import load_run_data, pareto_frontier, summaries
from analyzer.runs import RunSettings, execute_run
from analyzer.store import load_counts
from helpers import cli_output


def dominated(i: int, points: list[tuple[float, float]]) -> bool:
    """Brute force: some other point is no worse on both and better on one."""
    c, g = points[i]
    return any(oc <= c and og <= g and (oc < c or og < g)
               for j, (oc, og) in enumerate(points) if j != i and not math.isnan(oc + og))


values = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 1.5]), st.floats(0, 2),
                   st.just(float("nan")))


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(points=st.lists(st.tuples(values, values), max_size=12))
def test_the_frontier_is_the_set_no_point_dominates(points):
    marked = pareto_frontier([c for c, _ in points], [g for _, g in points])
    for i, (c, g) in enumerate(points):
        expected = not math.isnan(c + g) and not dominated(i, points)
        assert marked[i] == expected, (i, points)


@pytest.mark.slow
def test_a_run_s_configurations_have_cost_gini_worst_language_and_the_frontier(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 300], parity=True, superbpe=[280],
                                              tokenizers=["cl100k_base"], jobs=1,
                                              per_language=False))
    frame = summaries(load_run_data(tiny_db, run_id), resamples=200)
    counts = {(scope, size, lang): sum(units)
              for scope, _, size, lang, units in load_counts(tiny_db, run_id)}
    assert set(zip(frame["vocab"], frame["size"])) == {
        (vocab, size) for vocab in ("shared", "parity", "superbpe@280") for size in (270, 300)} | \
        {("cl100k_base", 100_277)}
    reference = frame[(frame["vocab"] == "shared") & (frame["size"] == 300)].iloc[0]
    assert reference["cost"] == 1.0
    languages = ["eng_Latn", "kor_Hang", "rus_Cyrl"]
    for _, row in frame.iterrows():
        totals = {lang: counts[row["vocab"], row["size"], lang] for lang in languages}
        assert row["cost"] == pytest.approx(sum(totals.values()) / reference["tokens"])
        assert row["cost_ci_low"] <= row["cost"] <= row["cost_ci_high"] or row["cost"] == 1.0
        premiums = {lang: totals[lang] / totals["eng_Latn"] for lang in languages}
        assert row["worst_lang"] == max(premiums, key=premiums.get)
        assert row["worst_premium"] == pytest.approx(max(premiums.values()))
        if row["vocab"] in ("parity", "superbpe@280"):
            shared = counts_of(counts, "shared", row["size"], languages)
            assert row["vs_shared"] == pytest.approx(sum(totals.values()) / shared - 1)
    assert frame[frame["vocab"] == "superbpe@280"]["transition"].tolist() == [280, 280]
    points = list(zip(frame["cost"], frame["gini"]))
    assert frame["frontier"].tolist() == [not dominated(i, points) for i in range(len(points))]
    assert frame["frontier"].any()


def counts_of(counts, vocab, size, languages):
    return sum(counts[vocab, size, lang] for lang in languages)


def test_show_and_its_json_give_the_frontier(db):
    shown = cli_output(db, "run", "--vocab", "270,300", "--parity", "--jobs", "1", "--no-report")
    assert "Cost against fairness" in shown and "parity at 300" in shown
    document = json.loads(cli_output(db, "show", "1", "--json"))
    keys = {"kind", "transition", "base", "added", "cost", "cost_ci_low", "cost_ci_high",
            "worst_lang", "worst_premium", "frontier"}
    assert all(keys <= set(row) for row in document["summaries"])
    assert {row["frontier"] for row in document["summaries"]} <= {True, False}
    assert any(row["frontier"] for row in document["summaries"])
    exported = json.loads(cli_output(db, "export", "1"))
    assert exported["summaries"] == document["summaries"]
    costs = np.array([row["cost"] for row in document["summaries"]])
    assert np.isfinite(costs).all()
