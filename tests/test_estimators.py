"""Both estimators of a premium (issue 71, item 5): the ratio of totals (Petrov et al.'s, the
default) and the mean of unit ratios (tokentax's), each with its bootstrap interval over the
same resamples, named in every face that shows a premium."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.metrics import (
    PREMIUM_ESTIMATOR,
    UNIT_ESTIMATOR,
    RunData,
    load_run_data,
    unit_ratios,
)
from analyzer.metrics.frames import RESAMPLES, _defined_means, language_metrics
from analyzer.metrics.stats import bootstrap_weights
from analyzer.store import open_db
from helpers import SAMPLE_CORPUS, cli_output


def literal_unit_mean(language: list[int], pivot: list[int],
                      drawn: list[int] | None = None) -> float:
    """The mean of unit ratios as its definition reads: each unit's tokens over the pivot's,
    averaged over the units the pivot has tokens in (each counted as often as it is `drawn`)."""
    drawn = drawn or [1] * len(pivot)
    ratios = [(lang / piv, times) for lang, piv, times in zip(language, pivot, drawn, strict=True)
              if piv > 0]
    count = sum(times for _, times in ratios)
    return sum(ratio * times for ratio, times in ratios) / count if count else float("nan")


counts = st.integers(min_value=0, max_value=40)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=8).flatmap(
    lambda n: st.tuples(st.lists(counts, min_size=n, max_size=n),
                        st.lists(st.lists(counts, min_size=n, max_size=n), min_size=1,
                                 max_size=3))),
       st.integers(min_value=0, max_value=2**16))
def test_the_mean_of_unit_ratios_and_its_resamples_equal_the_literal_definition(drawn, seed):
    pivot, others = drawn
    rows = np.array([pivot, *others], dtype=np.int64)
    ratios = unit_ratios(rows, 0)
    means = _defined_means(ratios)
    for row, mean in zip(rows, means, strict=True):
        expected = literal_unit_mean(list(row), pivot)
        assert (mean != mean and expected != expected) or mean == pytest.approx(expected)
    resamples = 7
    run = SimpleNamespace(measured_units=list(range(len(pivot))), seed=seed)
    data = RunData(run, [], {}, {}, {}, {}, {})  # type: ignore[arg-type]
    found = data.bootstrap_means(ratios, resamples)
    weights = bootstrap_weights(len(pivot), resamples, seed)
    for r in range(resamples):
        for i, row in enumerate(rows):
            expected = literal_unit_mean(list(row), pivot, list(weights[r]))
            value = found[i, r]
            assert (value != value and expected != expected) or value == pytest.approx(expected)


def test_a_unit_whose_pivot_has_no_tokens_is_left_out_not_infinite():
    rows = np.array([[2, 0, 4], [4, 3, 4]])
    assert np.isnan(unit_ratios(rows, 0)[1, 1])
    assert _defined_means(unit_ratios(rows, 0))[1] == pytest.approx((2 + 1) / 2)


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """The sample corpus, a shared vocabulary at two sizes, counted unit by unit."""
    db_path = tmp_path_factory.mktemp("estimators") / "a.db"
    cli_output(db_path, "ingest", SAMPLE_CORPUS)
    cli_output(db_path, "run", "--vocab", "300,400", "--jobs", "1", "--no-report")
    return db_path


def test_each_estimator_s_interval_holds_its_estimate_on_real_text(sample_run):
    frame = language_metrics(load_run_data(open_db(sample_run), 1))
    others = frame[frame["lang"] != "eng_Latn"]
    assert len(others[others["vocab"] == "shared"]) == 22 and others["unit_premium"].notna().all()
    for estimate in ("premium", "unit_premium"):
        low, high = others[f"{estimate}_ci_low"], others[f"{estimate}_ci_high"]
        assert ((low <= others[estimate]) & (others[estimate] <= high)).all(), estimate
        assert (high > low).all()
    # two estimators, not one under two names: they differ, and by little
    gap = (others["unit_premium"] / others["premium"] - 1).abs()
    assert (gap > 0).any() and (gap < 0.1).all()
    pivot = frame[frame["lang"] == "eng_Latn"]
    assert (pivot["unit_premium"] == 1).all()


def test_the_faces_name_the_estimator_and_carry_both(sample_run, tmp_path):
    document = json.loads(cli_output(sample_run, "show", "1", "--json"))
    record = next(r for r in document["records"] if r["lang"] == "hin_Deva")
    assert {"unit_premium", "unit_premium_ci_low", "unit_premium_ci_high"} <= set(record)
    assert record["unit_premium_ci_low"] <= record["unit_premium"] <= record["unit_premium_ci_high"]
    export = json.loads(cli_output(sample_run, "export", "1"))
    assert export["records"][0].keys() == document["records"][0].keys()
    named = {"premium": PREMIUM_ESTIMATOR, "unit_premium": UNIT_ESTIMATOR}
    assert document["estimators"] == export["estimators"] == named
    csv_head = cli_output(sample_run, "export", "1", "--format", "csv").splitlines()[0]
    assert "unit_premium,unit_premium_ci_low,unit_premium_ci_high" in csv_head
    shown = " ".join(cli_output(sample_run, "show", "1").split())
    assert f"Premiums are the {PREMIUM_ESTIMATOR}" in shown and UNIT_ESTIMATOR in shown
    cli_output(sample_run, "report", "1", "--out", tmp_path)
    page = (tmp_path / "run-1.html").read_text(encoding="utf-8")
    assert f"Premiums are the {PREMIUM_ESTIMATOR}" in page
    assert f"the tokens of English ({PREMIUM_ESTIMATOR})" in page  # the answer table's hover
    assert f"; {UNIT_ESTIMATOR} " in page


def test_joined_counts_have_no_mean_of_unit_ratios_and_say_so(db):
    cli_output(db, "run", "--vocab", "260", "--count", "joined", "--jobs", "1", "--no-report")
    frame = language_metrics(load_run_data(open_db(db), 1), RESAMPLES)
    assert frame["premium"].notna().all() and frame["unit_premium"].isna().all()
    assert frame["unit_premium_ci_low"].isna().all()
    shown = " ".join(cli_output(db, "show", "1").split())
    assert f"there is no {UNIT_ESTIMATOR}: each language was counted as one text" in shown
    document = json.loads(cli_output(db, "show", "1", "--json"))
    assert document["records"][0]["unit_premium"] is None
    assert document["estimators"] == {"premium": PREMIUM_ESTIMATOR, "unit_premium": None}


def test_the_resampled_means_are_the_same_without_room_for_blas(monkeypatch):
    """Where `ulimit -v` leaves BLAS no room (`product_type`), the products go through numpy's
    own loops, to the same means."""
    import analyzer.metrics.data as data_module

    rows = np.array([[3, 0, 5, 2, 7], [4, 2, 0, 3, 9], [1, 1, 1, 1, 1]])
    ratios = unit_ratios(rows, 0)
    run = SimpleNamespace(measured_units=list(range(5)), seed=3)
    with_blas = RunData(run, [], {}, {}, {}, {}, {}).bootstrap_means(ratios, 50)  # type: ignore[arg-type]
    monkeypatch.setattr(data_module, "address_room", lambda: 0)
    without = RunData(run, [], {}, {}, {}, {}, {}).bootstrap_means(ratios, 50)  # type: ignore[arg-type]
    assert np.allclose(with_blas, without, equal_nan=True)
    assert np.isnan(with_blas).sum() == np.isnan(without).sum()
