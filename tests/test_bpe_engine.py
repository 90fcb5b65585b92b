"""The engine must equal the reference exactly: merges, ids, counts, on any input."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import bpe
from analyzer.bpe import reference as ref

# Small alphabets make long runs ("aaaa", "abab") and many ties: the hard cases.
small_text = st.text(alphabet="ab", max_size=40) | st.text(alphabet="ab c", max_size=40) | \
    st.text(alphabet="aé中 ", max_size=25)
any_text = st.text(max_size=30)  # hypothesis never generates lone surrogates here
texts = st.lists(small_text | any_text, max_size=5)
sizes = st.integers(min_value=256, max_value=340)
tie_breaks = st.sampled_from(["lexicographic", "first"])
min_counts = st.sampled_from([1, 2])

engine_settings = settings(max_examples=300, deadline=None,
                           suppress_health_check=[HealthCheck.too_slow])


@engine_settings
@given(texts, sizes, tie_breaks, min_counts)
def test_train_equals_reference(texts, size, tie_break, min_count):
    expected = ref.train_many(texts, size, min_pair_count=min_count, tie_break=tie_break)
    assert bpe.train(texts, size, min_pair_count=min_count, tie_break=tie_break) == expected


@engine_settings
@given(small_text | any_text, sizes)
def test_train_of_one_str_equals_reference_train(text, size):
    assert bpe.train(text, size) == ref.train(text, size)


@engine_settings
@given(texts, small_text | any_text, tie_breaks, min_counts)
def test_encode_and_decode_equal_reference(texts, other, tie_break, min_count):
    merges = bpe.train(texts, 330, min_pair_count=min_count, tie_break=tie_break)
    for text in [*texts, other]:
        ids = bpe.encode(text, merges)
        assert ids == ref.encode(text, merges)
        assert bpe.decode(ids, merges) == ref.decode(ids, merges) == text


@engine_settings
@given(texts, small_text | any_text, st.data())
def test_count_tokens_equals_encoding_with_each_prefix(texts, other, data):
    merges = bpe.train(texts, 330, min_pair_count=data.draw(min_counts),
                       tie_break=data.draw(tie_breaks))
    wanted = data.draw(st.lists(st.integers(256, 256 + len(merges)), min_size=1, max_size=5))
    counted = bpe.count_tokens([*texts, other], merges, wanted)
    assert sorted(counted) == sorted(set(wanted))
    for size in wanted:
        prefix = merges[: size - 256]
        assert counted[size] == [len(ref.encode(text, prefix)) for text in [*texts, other]]


@engine_settings
@given(small_text | any_text, small_text | any_text, st.data())
def test_decoding_any_cut_never_raises(training_text, text, data):
    merges = bpe.train(training_text * 3, 300, min_pair_count=1)
    ids = bpe.encode(text, merges)
    cut = data.draw(st.integers(0, len(ids)))
    assert bpe.decode(ids[:cut], merges) == ref.decode(ids[:cut], merges)
    raw = data.draw(st.lists(st.integers(0, 255 + len(merges)), max_size=10))
    assert bpe.decode(raw, merges) == ref.decode(raw, merges)


@engine_settings
@given(st.text(alphabet="abcd ", min_size=1, max_size=60).map(lambda t: t * 4))
def test_training_is_prefix_consistent(text):
    long = bpe.train(text, 400)
    short = bpe.train(text, 256 + len(long) // 2)
    assert short == long[: len(short)]


def test_prefix_example_from_the_issue():
    text = "the quick brown fox jumps over the lazy dog. " * 30
    assert len(bpe.train(text, 400)) == 44
    assert bpe.train(text, 300) == bpe.train(text, 400)[:44]


def test_known_value_and_empty_inputs():
    assert len(bpe.train("the quick brown fox jumps over the lazy dog. " * 30, 1000)) == 44
    assert bpe.train("", 1000) == []
    assert bpe.train([], 1000) == []
    assert bpe.train(["", ""], 1000) == []
    assert bpe.train("abcabc", 256) == []


def test_overlapping_runs_merge_left_to_right():
    assert bpe.encode("aaaaa", [((97, 97), 256)]) == [256, 256, 97]
    assert bpe.train("aaaaaaaa", 300) == [((97, 97), 256), ((256, 256), 257)]


def test_training_reports_progress_after_each_merge():
    seen = []
    merges = bpe.train("abcabcabc abcabc", 270, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, 14) for k in range(1, len(merges) + 1)]


def test_training_details_explain_the_stop_and_the_token_counts():
    text = "aaaa" * 5
    training = bpe.train_detailed(text, 1000)
    assert training.stop_reason == "min_pair_count"
    assert training.n_bytes == 20
    assert training.counts[0] == 19  # overlaps counted
    assert training.applied[0] == 10
    for k in range(len(training.merges) + 1):
        assert training.tokens_after(k) == len(ref.encode(text, training.merges[:k]))
    assert bpe.train_detailed(text, 257).stop_reason == "vocab_size"


def test_a_lone_surrogate_is_a_value_error_that_says_where():
    with pytest.raises(ValueError, match=r"text 1, character 2"):
        bpe.train(["fine", "ab\ud800c"], 300)
    with pytest.raises(ValueError, match="character 0"):
        bpe.encode("\udfff", [])


def test_bad_arguments_are_rejected_clearly():
    with pytest.raises(ValueError, match="below 256"):
        bpe.train("abc", 100)
    with pytest.raises(ValueError, match="tie_break"):
        bpe.train("abc", 300, tie_break="last")
    with pytest.raises(ValueError, match="min_pair_count"):
        bpe.train("abc", 300, min_pair_count=0)
    with pytest.raises(TypeError, match="text 1"):
        bpe.train(["abc", 3], 300)
    with pytest.raises(TypeError, match="bytes"):
        bpe.train(b"abc", 300)


def test_decode_names_an_unknown_id():
    with pytest.raises(ValueError, match="unknown token id 256"):
        bpe.decode([97, 256], [])
    with pytest.raises(ValueError, match="-1"):
        bpe.decode([-1], [])


def test_count_tokens_rejects_sizes_the_merges_do_not_have():
    merges = bpe.train("abab abab", 260)
    with pytest.raises(ValueError, match="255"):
        bpe.count_tokens(["ab"], merges, [255])
    with pytest.raises(ValueError, match=str(257 + len(merges))):
        bpe.count_tokens(["ab"], merges, [257 + len(merges)])


@pytest.mark.parametrize("merges, message", [
    ([((97, 98), 300)], "creates id 300"),
    ([((97, 256), 256)], "uses id 256"),
    ([("ab", 256)], "merge 0"),
])
def test_malformed_merge_lists_are_rejected(merges, message):
    with pytest.raises(ValueError, match=message):
        bpe.encode("ab", merges)


def test_vocabulary_prepares_once_and_agrees_with_the_functions():
    merges = bpe.train(["hello world, hello there"] * 3, 300)
    vocab = bpe.Vocabulary(merges)
    assert vocab.size == 256 + len(merges)
    assert vocab.encode("hello") == bpe.encode("hello", merges)
    assert vocab.token_bytes(merges[-1][1]) == bytes(ref.to_ids(ref.decode([merges[-1][1]], merges)))


@engine_settings
@given(texts, small_text | any_text)
def test_measure_counts_like_count_tokens_and_round_trips(texts, other):
    merges = bpe.train(texts, 320)
    vocab = bpe.Vocabulary(merges)
    sizes = [256, 256 + len(merges)]
    measured = vocab.measure([*texts, other], sizes, roundtrip=True)
    assert measured.counts == bpe.count_tokens([*texts, other], merges, sizes)
    assert measured.roundtrip_ok is True
