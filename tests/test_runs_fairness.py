"""The fairness lab in runs: parity-aware vocabularies, training mixes, merge attribution,
equal-cost sizes and allocation, each checked against the literal reference computed here."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.bpe import reference as ref
from analyzer.metrics import (
    attribution,
    equal_cost_sizes,
    gini,
    language_metrics,
    load_run_data,
    summaries,
)
from analyzer.metrics.allocation import (
    divergence_matrix,
    jensen_shannon,
    mean_rank,
    renyi_efficiency,
    utilisation,
)
from analyzer.runs import RunError, RunSettings, execute_run, split_units
from analyzer.settings import SettingsError
from analyzer.store import get_run, list_runs, load_counts, load_merges
from helpers import TINY

SIZES = [256, 280, 320]
LANGS = sorted(TINY)


def stored_merges(db, run_id, scope):
    return [((left, right), new_id) for left, right, new_id, _, _ in load_merges(db, run_id, scope)]


def stored_counts(db, run_id):
    return {(scope, size, lang): units for scope, _, size, lang, units in load_counts(db, run_id)}


def encoded(texts, merges):
    return [ref.encode(text, merges) for text in texts]


def replaced_by_each_merge(texts, merges):
    """Occurrences merge k replaced in these texts: tokens with k merges minus with k + 1."""
    lengths = [sum(len(ids) for ids in encoded(texts, merges[:k])) for k in range(len(merges) + 1)]
    return [before - after for before, after in zip(lengths, lengths[1:])]


@pytest.fixture
def parity_run(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=SIZES, parity=True, jobs=1))
    return tiny_db, run_id


def test_the_parity_vocabulary_is_the_reference_and_counts_every_language(parity_run):
    db, run_id = parity_run
    merges = ref.train_parity(TINY, SIZES[-1])
    assert stored_merges(db, run_id, "parity") == merges
    assert stored_merges(db, run_id, "shared") != merges  # the sample is where they differ
    counts = stored_counts(db, run_id)
    for size in SIZES:
        for lang in LANGS:
            assert counts["parity", size, lang] == \
                [len(ids) for ids in encoded(TINY[lang], merges[:size - 256])], (size, lang)
    assert get_run(db, run_id).parity is True


def test_parity_with_a_holdout_decides_turns_on_the_held_out_units(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], parity=True, holdout=0.34, seed=3,
                                              global_merges=5, jobs=1))
    trained, held = split_units(6, 0.34, 3)
    assert get_run(tiny_db, run_id).measured_units == held
    texts = {lang: [TINY[lang][u] for u in trained] for lang in LANGS}
    dev = {lang: [TINY[lang][u] for u in held] for lang in LANGS}
    expected = ref.train_parity(texts, 300, dev=dev, global_merges=5)
    assert stored_merges(tiny_db, run_id, "parity") == expected
    assert expected != ref.train_parity(texts, 300, global_merges=5) or \
        expected != ref.train_parity(texts, 300, dev=dev)  # the settings matter here
    chosen = load_run_data(tiny_db, run_id).fairness.chosen[("parity", "none")]
    assert chosen[:5] == [None] * 5 and set(chosen[5:]) <= set(LANGS)


def test_a_training_mix_weights_the_shared_and_parity_vocabularies(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[320], parity=True,
                                              weights={"eng": 3}, jobs=1))
    run = get_run(tiny_db, run_id)
    assert run.weights == {"eng_Latn": 3}
    repeated = {lang: [text for text in TINY[lang] for _ in range(3 if lang == "eng_Latn" else 1)]
                for lang in LANGS}
    shared = ref.train_many([text for lang in run.languages for text in repeated[lang]], 320)
    assert stored_merges(tiny_db, run_id, "shared") == shared
    assert stored_merges(tiny_db, run_id, "parity") == ref.train_parity(repeated, 320, dev=TINY)
    # the languages' own vocabularies are trained on their own texts, unweighted
    assert stored_merges(tiny_db, run_id, "eng_Latn") == ref.train_many(TINY["eng_Latn"], 320)
    unweighted = execute_run(tiny_db, RunSettings(sizes=[320], jobs=1))
    assert stored_merges(tiny_db, unweighted, "shared") != shared


def test_replacements_histograms_and_curves_equal_the_reference(parity_run):
    db, run_id = parity_run
    data = load_run_data(db, run_id)
    fairness = data.fairness
    counts = stored_counts(db, run_id)
    for scope in ("shared", "parity"):
        merges = stored_merges(db, run_id, scope)
        for lang in LANGS:
            expected = replaced_by_each_merge(TINY[lang], merges)
            assert fairness.trained[(scope, "none")][lang] == expected, (scope, lang)
            assert fairness.measured[(scope, "none")][lang] == expected  # no holdout
            n_bytes = sum(len(text.encode()) for text in TINY[lang])
            for size in SIZES:  # the exact curve passes through every stored count
                assert n_bytes - sum(expected[:size - 256]) == sum(counts[scope, size, lang])
                histogram = Counter(i for ids in encoded(TINY[lang], merges[:size - 256])
                                    for i in ids)
                assert fairness.histograms[(scope, "none", size)][lang] == dict(histogram)
    own = stored_merges(db, run_id, "kor_Hang")
    assert fairness.measured[("kor_Hang", "none")]["kor_Hang"] == \
        replaced_by_each_merge(TINY["kor_Hang"], own)


def test_allocation_columns_follow_the_histograms(parity_run):
    db, run_id = parity_run
    data = load_run_data(db, run_id)
    frame = language_metrics(data, resamples=20)
    row = frame[(frame["vocab"] == "parity") & (frame["size"] == 320)
                & (frame["lang"] == "rus_Cyrl")].iloc[0]
    histogram = data.fairness.histograms[("parity", "none", 320)]["rus_Cyrl"]
    assert row["utilisation"] == pytest.approx(len(histogram) / 320)
    assert row["mean_rank"] == pytest.approx(mean_rank(histogram))
    assert row["renyi_efficiency"] == pytest.approx(renyi_efficiency(histogram, 320))
    assert 0 < row["renyi_efficiency"] < 1


def test_allocation_metrics_by_hand():
    # two tokens once each, of a vocabulary of 8: a quarter used, equally often
    assert utilisation({65: 1, 300: 1}, 8) == 0.25
    assert mean_rank({65: 1, 300: 3}) == (65 + 900) / 4
    assert renyi_efficiency({1: 1, 2: 1}, 4) == pytest.approx(0.5)  # log 2 / log 4
    # p = (1/2, 1/2), q = (1, 0), m = (3/4, 1/4):
    # KL(p||m) = 1/2 log2(2/3) + 1/2 log2 2 = 0.2075, KL(q||m) = log2(4/3) = 0.4150
    assert jensen_shannon({1: 1, 2: 1}, {1: 7}) == pytest.approx((0.207519 + 0.415037) / 2,
                                                                   abs=1e-6)
    assert jensen_shannon({1: 3}, {1: 1}) == 0.0


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["eng", "kor", "rus", "tha", "zho"]),
                       st.dictionaries(st.integers(0, 12), st.integers(1, 50), min_size=1),
                       min_size=1))
def test_the_divergence_matrix_is_every_pair_s_jensen_shannon(by_lang):
    """All pairs at once (each row on its own language's tokens only) equals the readable
    pairwise definition, on histograms that share some tokens, all or none."""
    languages = sorted(by_lang)
    matrix = divergence_matrix(by_lang, languages)
    assert list(matrix.index) == list(matrix.columns) == languages
    for a in languages:
        for b in languages:
            expected = 0.0 if a == b else jensen_shannon(by_lang[a], by_lang[b])
            assert matrix.loc[a, b] == pytest.approx(expected, abs=1e-9)


def test_attribution_shares_follow_the_replacements(parity_run):
    db, run_id = parity_run
    frame = attribution(load_run_data(db, run_id))
    assert set(frame["vocab"]) == {"shared", "parity"}
    merges = stored_merges(db, run_id, "shared")
    replaced = {lang: replaced_by_each_merge(TINY[lang], merges) for lang in LANGS}
    leader_share = Counter()
    for k in range(len(merges)):
        top = max(replaced[lang][k] for lang in LANGS)
        leaders = [lang for lang in LANGS if replaced[lang][k] == top and top > 0]
        for lang in leaders:
            leader_share[lang] += 1 / len(leaders) / len(merges)
    total_bytes = sum(len(text.encode()) for lang in LANGS for text in TINY[lang])
    shared = frame[frame["vocab"] == "shared"].set_index("lang")
    for lang in LANGS:
        assert shared.loc[lang, "merges_share"] == pytest.approx(leader_share[lang])
        assert shared.loc[lang, "bytes_share"] == \
            pytest.approx(sum(len(t.encode()) for t in TINY[lang]) / total_bytes)
        first = next(k for k, n in enumerate(replaced[lang]) if n)
        assert shared.loc[lang, "first_merge"] == first + 1
        assert np.isnan(shared.loc[lang, "chosen_share"])
    assert shared["occurrences_share"].sum() == pytest.approx(1)
    parity = frame[frame["vocab"] == "parity"].set_index("lang")
    chosen = load_run_data(db, run_id).fairness.chosen[("parity", "none")]
    assert parity["chosen_share"].to_dict() == \
        pytest.approx({lang: chosen.count(lang) / len(chosen) for lang in LANGS})


def brute_force_equal_cost(texts, pivot_texts, merges, reference_size):
    """The smallest size whose tokens are at most the pivot's at reference_size, by encoding
    at every size."""
    def tokens(which, size):
        return sum(len(ids) for ids in encoded(which, merges[:size - 256]))
    target = tokens(pivot_texts, reference_size)
    return next((size for size in range(256, 256 + len(merges) + 1)
                 if tokens(texts, size) <= target), None)


@pytest.mark.parametrize("reference_size", [None, 280])
def test_equal_cost_sizes_are_exact_at_every_size(parity_run, reference_size):
    db, run_id = parity_run
    found = equal_cost_sizes(load_run_data(db, run_id), reference_size)
    reference_size = reference_size or SIZES[-1]
    assert {(row["vocab"], row["reference_size"]) for row in found} >= \
        {("shared", reference_size), ("parity", reference_size)}
    for row in found:
        if row["vocab"] in ("shared", "parity"):
            merges = stored_merges(db, run_id, row["vocab"])
            expected = brute_force_equal_cost(TINY[row["lang"]], TINY["eng_Latn"], merges,
                                              reference_size)
        else:  # the language's own vocabulary, against English's own
            merges = stored_merges(db, run_id, row["lang"])
            pivot_merges = stored_merges(db, run_id, "eng_Latn")
            target = sum(len(ids) for ids in encoded(TINY["eng_Latn"],
                                                     pivot_merges[:reference_size - 256]))
            expected = next((size for size in range(256, 256 + len(merges) + 1)
                             if sum(len(ids) for ids in encoded(TINY[row["lang"]],
                                                                merges[:size - 256])) <= target),
                            None)
        assert row["size"] == expected, row
    assert any(row["size"] is None for row in found)  # Korean never gets there on this sample


def test_summaries_give_gini_and_the_price_of_parity(parity_run):
    db, run_id = parity_run
    frame = summaries(load_run_data(db, run_id), resamples=200)
    counts = stored_counts(db, run_id)
    for _, row in frame.iterrows():
        totals = {lang: sum(counts[row["vocab"], row["size"], lang]) for lang in LANGS}
        assert row["tokens"] == sum(totals.values())
        premiums = np.array([totals[lang] / totals["eng_Latn"] for lang in LANGS])
        assert row["gini"] == pytest.approx(gini(premiums))
        assert row["gini_ci_low"] <= row["gini_ci_high"]
    parity = frame[frame["vocab"] == "parity"].set_index("size")
    shared = frame[frame["vocab"] == "shared"].set_index("size")
    assert parity.loc[256, "vs_shared"] == 0  # no merges yet: the same bytes
    assert parity.loc[320, "vs_shared"] == \
        pytest.approx(parity.loc[320, "tokens"] / shared.loc[320, "tokens"] - 1)
    assert parity.loc[320, "vs_shared_ci_low"] <= parity.loc[320, "vs_shared_ci_high"]
    assert parity.loc[320, "gini"] < shared.loc[320, "gini"]  # fairer, on this sample too
    assert shared["vs_shared"].isna().all()


@pytest.mark.parametrize("settings, message", [
    (dict(weights={"eng": 0}), "weights eng=0: each must be from 1 to"),
    (dict(weights={"fra": 2}), "fra_Latn is not a language of this run"),
    (dict(weights={"not a code!": 2}), "weights not a code!=2"),
    (dict(weights={"eng": 2, "eng_Latn": 3}), "weighted twice"),
    (dict(global_merges=3), "global_merges is for the parity-aware vocabulary: add parity"),
    (dict(parity=True, global_merges=-1), "global_merges must be from 0 to"),
    (dict(parity=True, languages=["eng"]), "parity needs two languages"),
])
def test_bad_fairness_settings_are_refused_before_anything_is_stored(tiny_db, settings, message):
    """The library names each setting by its own name (the command line renders its flags)."""
    with pytest.raises((RunError, SettingsError), match=message) as raised:
        execute_run(tiny_db, RunSettings(sizes=[300], jobs=1, **settings))
    assert raised.value.setting in settings or raised.value.setting == "parity"
    assert list_runs(tiny_db) == []
