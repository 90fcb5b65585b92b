"""Runs: every stored count equals the literal reference, computed independently here."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.bpe import reference as ref
from analyzer.metrics import gini, language_metrics, load_run_data, own_vocabulary
from analyzer.runs import RunSettings, execute_run, split_units
from analyzer.store import get_run, load_counts, load_merges, vocabularies
from helpers import TINY

SIZES = [256, 270, 300]


def stored_counts(db, run_id):
    return {(scope, size, lang): units for scope, _, size, lang, units in load_counts(db, run_id)}


def reference_counts(train_texts, measured, size, **settings):
    merges = ref.train_many(train_texts, size, **settings)
    return merges, [len(ref.encode(text, merges)) for text in measured]


@pytest.mark.parametrize("tie_break, min_count", [("lexicographic", 2), ("first", 1)])
def test_every_count_equals_the_reference(tiny_db, tie_break, min_count):
    run_id = execute_run(tiny_db, RunSettings(sizes=SIZES, tie_break=tie_break,
                                              min_pair_count=min_count, jobs=1))
    counts = stored_counts(tiny_db, run_id)
    langs = get_run(tiny_db, run_id).languages  # training order matters for "first" ties
    assert sorted(langs) == sorted(TINY)
    settings = dict(min_pair_count=min_count, tie_break=tie_break)
    shared_training = [text for lang in langs for text in TINY[lang]]
    for size in SIZES:
        for lang in langs:
            merges, expected = reference_counts(shared_training, TINY[lang], size, **settings)
            assert counts["shared", size, lang] == expected, (size, lang)
            _, own = reference_counts(TINY[lang], TINY[lang], size, **settings)
            assert counts[lang, size, lang] == own
            _, pivot_under_own = reference_counts(TINY[lang], TINY["eng_Latn"], size, **settings)
            assert counts[lang, size, "eng_Latn"] == pivot_under_own
    stored = load_merges(tiny_db, run_id, "shared")
    expected_merges = ref.train_many(shared_training, SIZES[-1], **settings)
    assert [((l, r), n) for l, r, n, _, _ in stored] == expected_merges
    assert all(v.roundtrip_ok for v in vocabularies(tiny_db, run_id))


def test_without_cross_a_language_vocabulary_counts_itself_and_the_pivot(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], jobs=1))
    assert {lang for scope, _, lang in stored_counts(tiny_db, run_id) if scope == "kor_Hang"} \
        == {"kor_Hang", "eng_Latn"}


def test_cross_counts_every_language_under_every_vocabulary_in_parallel(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], cross=True, jobs=2))
    counts = stored_counts(tiny_db, run_id)
    assert len(counts) == 4 * 3  # shared + 3 own vocabularies, 3 languages each
    _, expected = reference_counts(TINY["rus_Cyrl"], TINY["kor_Hang"], 300)
    assert counts["rus_Cyrl", 300, "kor_Hang"] == expected


def test_holdout_trains_without_the_held_out_units(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], holdout=0.34, seed=7, jobs=1))
    run = get_run(tiny_db, run_id)
    train, held = split_units(6, 0.34, 7)
    assert run.measured_units == held and not set(train) & set(held)
    # The stored merges are what training on the training units alone learns...
    stored = load_merges(tiny_db, run_id, "shared")
    shared_training = [TINY[lang][u] for lang in run.languages for u in train]
    assert [((l, r), n) for l, r, n, _, _ in stored] == ref.train_many(shared_training, 300)
    # ...and the counts are of the held-out units only.
    counts = stored_counts(tiny_db, run_id)
    _, expected = reference_counts(shared_training, [TINY["rus_Cyrl"][u] for u in held], 300)
    assert counts["shared", 300, "rus_Cyrl"] == expected


def test_the_split_is_the_same_for_the_same_seed_and_differs_for_another():
    assert split_units(100, 0.2, 3) == split_units(100, 0.2, 3)
    assert split_units(100, 0.2, 3) != split_units(100, 0.2, 4)
    train, held = split_units(100, 0.2, 3)
    assert len(held) == 20 and sorted(train + held) == list(range(100))


def test_sizes_beyond_an_early_stop_equal_the_final_size(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300, 5000], jobs=1))
    shared = next(v for v in vocabularies(tiny_db, run_id) if v.scope == "shared")
    assert shared.stop_reason == "min_pair_count" and shared.merges_learned < 5000 - 256
    counts = stored_counts(tiny_db, run_id)
    langs = get_run(tiny_db, run_id).languages
    merges = ref.train_many([t for lang in langs for t in TINY[lang]], 5000)
    assert counts["shared", 5000, "eng_Latn"] == [len(ref.encode(t, merges)) for t in TINY["eng_Latn"]]


def test_metrics_premium_decomposes_into_bytes_and_vocabulary(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 300], jobs=1))
    frame = language_metrics(load_run_data(tiny_db, run_id), resamples=200)
    shared = frame[frame["vocab"] == "shared"]
    identity = shared["byte_premium"] * shared["pivot_bytes_per_token"] / shared["bytes_per_token"]
    assert np.allclose(shared["premium"], identity)
    row = shared[(shared["lang"] == "kor_Hang") & (shared["size"] == 300)].iloc[0]
    counts = stored_counts(tiny_db, run_id)
    korean, english = counts["shared", 300, "kor_Hang"], counts["shared", 300, "eng_Latn"]
    assert row["premium"] == pytest.approx(sum(korean) / sum(english))
    kor_bytes = sum(len(t.encode()) for t in TINY["kor_Hang"])
    eng_bytes = sum(len(t.encode()) for t in TINY["eng_Latn"])
    assert row["byte_premium"] == pytest.approx(kor_bytes / eng_bytes)
    assert row["premium_ci_low"] <= row["premium"] <= row["premium_ci_high"]
    assert row["unit_premium_median"] == pytest.approx(np.median(np.array(korean) / np.array(english)))
    words = sum(len(t.split()) for t in TINY["kor_Hang"])
    assert row["fertility"] == pytest.approx(sum(korean) / words)
    premiums = shared[shared["size"] == 300]["premium"]
    assert row["gini"] == pytest.approx(gini(premiums))
    pivot = shared[shared["lang"] == "eng_Latn"]
    assert (pivot["premium"] == 1).all() and (pivot["premium_ci_low"] == 1).all()


def test_own_vocabulary_view(tiny_db):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], jobs=1))
    own = own_vocabulary(language_metrics(load_run_data(tiny_db, run_id), resamples=50), "eng_Latn")
    counts = stored_counts(tiny_db, run_id)
    russian = own[own["lang"] == "rus_Cyrl"].iloc[0]
    assert russian["own_tokens"] == sum(counts["rus_Cyrl", 300, "rus_Cyrl"])
    assert russian["own_premium"] == pytest.approx(
        sum(counts["rus_Cyrl", 300, "rus_Cyrl"]) / sum(counts["eng_Latn", 300, "eng_Latn"]))


def test_gini_and_fertility_rules():
    from analyzer.metrics import separates_words

    assert gini([2, 2, 2, 2]) == pytest.approx(0)
    assert gini([0, 0, 0, 4]) == pytest.approx(0.75)
    assert separates_words("rus_Cyrl") and separates_words("kor_Hang")
    assert not separates_words("zho_Hans") and not separates_words("tha_Thai")


class ScriptedQueue:
    """A job queue that gives its messages in order, `queue.Empty` where the script says so."""

    def __init__(self, *script):
        self.script = list(script)

    def get(self, timeout=None):
        import queue

        if not self.script or self.script[0] is None:
            if self.script:
                self.script.pop(0)
            raise queue.Empty
        return self.script.pop(0)


class EndedProcess:
    exitcode = 0

    def is_alive(self):
        return False

    def join(self):
        pass


def test_a_job_that_ended_is_waited_for_past_other_messages_before_it_is_called_dead():
    """The pool found a job's process gone with its messages still in the pipe: its progress,
    another job's, then its record. It reads on to the record instead of failing the run."""
    from analyzer.runs.pool import _receive

    record, progress = object(), ("progress", ("shared", "done", 1, 1))
    running = {0: EndedProcess(), 1: EndedProcess()}
    results: dict = {}
    reported = []
    messages = ScriptedQueue(None, progress, progress, ("record", 1, "other"), ("record", 0, record))
    _receive(messages, running, results, [], lambda *step: reported.append(step))
    assert results == {0: record, 1: "other"} and running == {} and len(reported) == 2


def test_a_job_that_ended_without_its_record_fails_the_run_naming_it():
    from analyzer.identity import VocabularyId
    from analyzer.runs import RunError
    from analyzer.runs.plan import TrainingTexts, VocabularyJob
    from analyzer.runs.pool import _receive

    job = VocabularyJob(VocabularyId.shared(), TrainingTexts({}), {}, [300], "lexicographic", 2)
    messages = ScriptedQueue(None, ("progress", ("shared", "done", 1, 1)), None)
    with pytest.raises(RunError, match="the shared job's process ended without a result"):
        _receive(messages, {0: EndedProcess()}, {}, [job], None)
