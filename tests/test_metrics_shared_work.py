"""The metrics' work done once and in bulk (issue 69: a 204-language run's report took 11.7 s
and its export 13.7 s), with the same numbers to the last bit as the work done one piece at a
time: the bootstrap's totals in one product for every configuration, the Gini of every
resample at once, the percentiles of every configuration of as many languages at once, the
divergence's -p log p in place, histograms and a run's unit sizes read as arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from analyzer.metrics import data as data_module
from analyzer.metrics import frames, gini, language_metrics, load_run_data, summaries
from analyzer.metrics.allocation import (
    _bits,
    divergence_matrix,
    mean_rank,
    renyi_efficiency,
    utilisation,
)
from analyzer.metrics.stats import bootstrap_weights, ginis
from analyzer.runs import RunSettings, execute_run
from analyzer.store import NotFound, iter_merges, unit_stats, vocabularies
from analyzer.store import runs as store_runs
from analyzer.store.replacements import pack_histogram, unpack_histogram


@pytest.fixture
def a_run(tiny_db):
    """Shared, per-language and parity-aware vocabularies at two sizes."""
    return tiny_db, execute_run(tiny_db, RunSettings(sizes=[256, 300], parity=True, jobs=1))


values = hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=40),
                    elements=st.one_of(st.just(0.0), st.floats(0, 1e6, allow_subnormal=False)))


@settings(max_examples=60, deadline=None)
@given(values, st.booleans())
def test_the_gini_of_each_row_at_once_is_each_row_s_gini_to_the_bit(matrix, transposed):
    rows = matrix.T if transposed else matrix  # a transposed view: columns in memory
    assert ginis(rows).tolist() == [gini(row) for row in rows]


def test_the_gini_of_rows_that_are_a_transposed_view_to_the_bit():
    """Resamples' premiums are the columns of a languages x resamples matrix: sorted as they
    lie, each row would be summed across memory, in another order (the last bits differed)."""
    premiums = np.random.default_rng(7).random((204, 300)) * 3
    assert ginis(premiums.T).tolist() == [gini(premiums[:, r]) for r in range(300)]


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=30),
                  elements=st.one_of(st.sampled_from([0.0, 1.0, 0.5]),
                                     st.floats(0, 1, allow_subnormal=False))))
def test_bits_are_the_gathered_form_s_to_the_bit_and_the_sign(x):
    expected = np.zeros_like(x)
    positive = x > 0
    expected[positive] = -x[positive] * np.log2(x[positive])
    found = _bits(x)
    assert found.tolist() == expected.tolist()
    assert np.signbit(found).tolist() == np.signbit(expected).tolist()  # -0.0 where x is 1


def test_the_bootstrap_totals_are_each_configuration_s_own_product(a_run):
    db, run_id = a_run
    data = load_run_data(db, run_id)
    run = data.run
    weights = bootstrap_weights(len(run.measured_units), 300, run.seed)
    totals = data.bootstrap_totals(300)
    assert set(totals) == {key for key, by_lang in data.counts.items() if run.pivot in by_lang}
    for key, boot in totals.items():
        langs = [lang for lang in run.languages if lang in data.counts[key]]
        tokens = np.vstack([data.counts[key][lang] for lang in langs])
        assert boot.tolist() == (tokens @ weights.T).tolist(), key  # integers, exactly


def test_the_bootstrap_is_drawn_once_for_the_records_and_the_summaries(a_run, monkeypatch):
    """One draw and one product for every configuration, shared by the sections that draw
    intervals (a product per configuration woke BLAS's threads 400 times at 200 languages)."""
    db, run_id = a_run
    drawn = []
    monkeypatch.setattr(data_module, "bootstrap_weights",
                        lambda *args: drawn.append(args) or bootstrap_weights(*args))
    data = load_run_data(db, run_id)
    frame = language_metrics(data, resamples=100)
    table = summaries(data, resamples=100)
    assert len(drawn) == 1
    assert frame["premium_ci_low"].notna().any() and table["gini_ci_low"].notna().all()


def test_unit_sizes_follow_the_units_asked_for_in_their_order(a_run):
    db, run_id = a_run
    run = load_run_data(db, run_id, fairness=False).run
    every = unit_stats(db, run.corpus_id, run.languages, list(range(6)))
    asked = [4, 0, 5, 2]
    some = unit_stats(db, run.corpus_id, run.languages, asked)
    for what in ("bytes", "chars", "words"):
        for lang in run.languages:
            assert some[what][lang].tolist() == [int(every[what][lang][u]) for u in asked]
    assert unit_stats(db, run.corpus_id, run.languages, [])["bytes"][run.languages[0]].size == 0


def test_a_vocabulary_s_merges_are_read_without_reading_its_run_again(a_run, monkeypatch):
    """An export reads the merges of each of hundreds of vocabularies: the run is read (a
    query and a check of its process) only to say that a missing one's run is missing."""
    db, run_id = a_run
    read = []
    real = store_runs.get_run
    monkeypatch.setattr(store_runs, "get_run", lambda *args: read.append(args) or real(*args))
    for vocabulary in vocabularies(db, run_id):
        list(iter_merges(db, run_id, vocabulary.scope, vocabulary.pretokenizer))
    assert read == []
    with pytest.raises(NotFound, match="no run 99"):
        list(iter_merges(db, 99, "shared"))
    with pytest.raises(NotFound, match="has no vocabulary 'nothing'"):
        list(iter_merges(db, run_id, "nothing"))


@pytest.mark.parametrize("block", [3, 4096])
def test_each_configuration_s_spread_is_numpy_s_on_it_alone(a_run, monkeypatch, block):
    """Configurations of as many languages go through numpy's percentile together, in
    blocks of rows (3: each block smaller than a group): each value is the one a call per
    configuration gives, to the bit."""
    db, run_id = a_run
    data = load_run_data(db, run_id)
    monkeypatch.setattr(frames, "_BLOCK", block)
    spreads = frames._spreads(data, 100)
    boots = data.bootstrap_totals(100)
    assert set(spreads) == set(boots)
    for key, (median, q1, q3, low, high, mean, mean_low, mean_high) in spreads.items():
        langs = data.on_pivot(key)
        p = langs.index(data.run.pivot)
        tokens = np.vstack([data.counts[key][lang] for lang in langs])
        units = tokens / tokens[p]
        assert median.tolist() == np.median(units, axis=1).tolist()
        assert [q1.tolist(), q3.tolist()] == np.percentile(units, [25, 75], axis=1).tolist()
        expected = np.percentile(boots[key] / boots[key][p], [2.5, 97.5], axis=1)
        assert [low.tolist(), high.tolist()] == expected.tolist()
        # the mean of unit ratios (issue 71): the configuration's own, whatever its block
        ratios = frames.unit_ratios(tokens, p)
        assert mean.tolist() == frames._defined_means(ratios).tolist()
        means = np.percentile(data.bootstrap_means(ratios, 100), [2.5, 97.5], axis=1)
        assert np.allclose([mean_low, mean_high], means, rtol=1e-12, atol=0)


histograms = st.dictionaries(st.integers(0, 600), st.integers(1, 50), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(st.lists(histograms, min_size=1, max_size=5))
def test_stored_histograms_give_the_dicts_allocation_and_divergence_to_the_bit(found):
    """A histogram read from the store (`TokenHistogram`: arrays) gives every allocation
    metric and the divergence exactly as the same histogram as a dict."""
    stored = [unpack_histogram(pack_histogram(histogram)) for histogram in found]
    assert [dict(h) for h in stored] == found
    for histogram, arrays in zip(found, stored):
        assert utilisation(arrays, 700) == utilisation(histogram, 700)
        assert mean_rank(arrays) == mean_rank(histogram)
        assert renyi_efficiency(arrays, 700) == renyi_efficiency(histogram, 700)
    langs = [f"l{i}" for i in range(len(found))]
    as_dicts = divergence_matrix(dict(zip(langs, found)), langs).to_numpy()
    as_arrays = divergence_matrix(dict(zip(langs, stored)), langs).to_numpy()
    assert as_arrays.tolist() == as_dicts.tolist()
