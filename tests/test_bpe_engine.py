"""Both engines must equal the reference exactly: merges, ids, counts, on any input.

Every test here runs once per engine ("python" and "compiled"); the compiled one is skipped,
saying why, on a machine where it could not be built (test_project checks that it is built
wherever a C compiler is).
"""

from __future__ import annotations

import threading
from array import array

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import bpe
from analyzer.bpe import reference as ref


def train(engine, texts, size, **options):
    return engine.train_detailed(texts, size, **options).merges


# Small alphabets make long runs ("aaaa", "abab") and many ties: the hard cases.
small_text = st.text(alphabet="ab", max_size=40) | st.text(alphabet="ab c", max_size=40) | \
    st.text(alphabet="aé中 ", max_size=25)
any_text = st.text(max_size=30)  # hypothesis never generates lone surrogates here
texts = st.lists(small_text | any_text, max_size=5)
sizes = st.integers(min_value=256, max_value=340)
tie_breaks = st.sampled_from(["lexicographic", "first"])
min_counts = st.sampled_from([1, 2])

engine_settings = settings(max_examples=250, deadline=None,
                           suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])


@engine_settings
@given(texts=texts, size=sizes, tie_break=tie_breaks, min_count=min_counts)
def test_train_equals_reference(engine, texts, size, tie_break, min_count):
    expected = ref.train_many(texts, size, min_pair_count=min_count, tie_break=tie_break)
    assert train(engine, texts, size, min_pair_count=min_count, tie_break=tie_break) == expected


@engine_settings
@given(text=small_text | any_text, size=sizes)
def test_train_of_one_str_equals_reference_train(engine, text, size):
    assert train(engine, text, size) == ref.train(text, size)


weighted = st.lists(st.tuples(small_text | any_text, st.integers(1, 4)), max_size=5)


@pytest.mark.slow
@engine_settings
@given(pairs=weighted, size=sizes, tie_break=tie_breaks, min_count=min_counts)
def test_weighted_training_equals_the_reference_on_the_expanded_list(engine, pairs, size, tie_break,
                                                                      min_count):
    texts = [text for text, _ in pairs]
    weights = [weight for _, weight in pairs]
    expanded = [text for text, weight in pairs for _ in range(weight)]  # copies in place
    expected = ref.train_many(expanded, size, min_pair_count=min_count, tie_break=tie_break)
    training = engine.train_detailed(texts, size, weights=weights, min_pair_count=min_count,
                                     tie_break=tie_break)
    assert training.merges == expected
    for k in range(len(expected) + 1):
        assert training.tokens_after(k) == sum(len(ref.encode(t, expected[:k])) for t in expanded)


@engine_settings
@given(texts=texts, size=sizes, tie_break=tie_breaks, min_count=min_counts)
def test_weight_one_everywhere_is_unweighted(engine, texts, size, tie_break, min_count):
    options = dict(min_pair_count=min_count, tie_break=tie_break)
    plain = engine.train_detailed(texts, size, **options)
    ones = engine.train_detailed(texts, size, weights=[1] * len(texts), **options)
    assert ones == plain


@pytest.mark.slow
@engine_settings
@given(pairs=st.lists(st.tuples(small_text, st.integers(1, 10**6)), min_size=1, max_size=4),
       tie_break=tie_breaks)
def test_large_weights(engine, pairs, tie_break):
    """Weights too large to expand: the two engines agree, counts scale with the weights, and
    weight w equals the reference on w copies where w is small enough to expand."""
    texts = [text for text, _ in pairs]
    weights = [weight for _, weight in pairs]
    training = engine.train_detailed(texts, 300, weights=weights, tie_break=tie_break)
    other = bpe.ENGINES["python"].train_detailed(texts, 300, weights=weights, tie_break=tie_break)
    assert training == other
    assert training.n_bytes == sum(len(t.encode()) * w for t, w in pairs)
    scaled = engine.train_detailed(texts, 300, weights=[2 * w for w in weights],
                                   tie_break=tie_break, min_pair_count=2)
    doubled = engine.train_detailed(texts, 300, weights=weights, tie_break=tie_break,
                                    min_pair_count=1)
    assert scaled.merges == doubled.merges
    assert scaled.counts == [2 * count for count in doubled.counts]


@engine_settings
@given(texts=texts, other=small_text | any_text, tie_break=tie_breaks, min_count=min_counts)
def test_encode_and_decode_equal_reference(engine, texts, other, tie_break, min_count):
    merges = train(engine, texts, 330, min_pair_count=min_count, tie_break=tie_break)
    vocabulary = engine.Vocabulary(merges)
    for text in [*texts, other]:
        ids = vocabulary.encode(text)
        assert ids == ref.encode(text, merges)
        assert vocabulary.decode(ids) == ref.decode(ids, merges) == text


@pytest.mark.slow
@engine_settings
@given(texts=texts, other=small_text | any_text, data=st.data())
def test_count_tokens_equals_encoding_with_each_prefix(engine, texts, other, data):
    merges = train(engine, texts, 330, min_pair_count=data.draw(min_counts),
                   tie_break=data.draw(tie_breaks))
    wanted = data.draw(st.lists(st.integers(256, 256 + len(merges)), min_size=1, max_size=5))
    counted = engine.Vocabulary(merges).count_tokens([*texts, other], wanted)
    assert sorted(counted) == sorted(set(wanted))
    for size in wanted:
        prefix = merges[: size - 256]
        assert counted[size] == [len(ref.encode(text, prefix)) for text in [*texts, other]]


@engine_settings
@given(training_text=small_text | any_text, text=small_text | any_text, data=st.data())
def test_decoding_any_cut_never_raises(engine, training_text, text, data):
    merges = train(engine, training_text * 3, 300, min_pair_count=1)
    vocabulary = engine.Vocabulary(merges)
    ids = vocabulary.encode(text)
    cut = data.draw(st.integers(0, len(ids)))
    assert vocabulary.decode(ids[:cut]) == ref.decode(ids[:cut], merges)
    raw = data.draw(st.lists(st.integers(0, 255 + len(merges)), max_size=10))
    assert vocabulary.decode(raw) == ref.decode(raw, merges)


@engine_settings
@given(text=st.text(alphabet="abcd ", min_size=1, max_size=60).map(lambda t: t * 4))
def test_training_is_prefix_consistent(engine, text):
    long = train(engine, text, 400)
    short = train(engine, text, 256 + len(long) // 2)
    assert short == long[: len(short)]


@engine_settings
@given(texts=texts, other=small_text | any_text)
def test_measure_counts_like_count_tokens_and_round_trips(engine, texts, other):
    merges = train(engine, texts, 320)
    vocabulary = engine.Vocabulary(merges)
    sizes = [256, 256 + len(merges)]
    measured = vocabulary.measure([*texts, other], sizes, roundtrip=True)
    assert measured.counts == vocabulary.count_tokens([*texts, other], sizes)
    assert measured.roundtrip_ok is True


def test_the_engines_agree_on_counts_and_replacements(engine):
    text = ["the quick brown fox jumps over the lazy dog. " * 30, "aaaa" * 20, "абабаб" * 9]
    for tie_break in ("lexicographic", "first"):
        assert engine.train_detailed(text, 500, tie_break=tie_break) == \
            bpe.ENGINES["python"].train_detailed(text, 500, tie_break=tie_break)


def test_prefix_example_from_the_issue(engine):
    text = "the quick brown fox jumps over the lazy dog. " * 30
    assert len(train(engine, text, 400)) == 44
    assert train(engine, text, 300) == train(engine, text, 400)[:44]


def test_known_value_and_empty_inputs(engine):
    assert len(train(engine, "the quick brown fox jumps over the lazy dog. " * 30, 1000)) == 44
    assert train(engine, "", 1000) == []
    assert train(engine, [], 1000) == []
    assert train(engine, ["", ""], 1000) == []
    assert train(engine, "abcabc", 256) == []
    assert engine.Vocabulary([]).count_tokens(["", "a"], [256]) == {256: [0, 1]}
    assert engine.Vocabulary([]).encode("") == []


def test_overlapping_runs_merge_left_to_right(engine):
    assert engine.Vocabulary([((97, 97), 256)]).encode("aaaaa") == [256, 256, 97]
    assert train(engine, "aaaaaaaa", 300) == [((97, 97), 256), ((256, 256), 257)]


def test_training_reports_progress_and_ends_with_the_last_merge(engine):
    seen = []
    training = engine.train_detailed("abcabcabc abcabc " * 40, 400,
                                     progress=lambda done, total: seen.append((done, total)))
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == len(training.merges) and {t for _, t in seen} == {144}


def test_an_exception_in_progress_stops_training(engine):
    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.train_detailed("abcabcabc abcabc " * 40, 400, progress=stop)


def test_training_details_explain_the_stop_and_the_token_counts(engine):
    text = "aaaa" * 5
    training = engine.train_detailed(text, 1000)
    assert training.stop_reason == "min_pair_count"
    assert training.n_bytes == 20
    assert training.counts[0] == 19  # overlaps counted
    assert training.replaced[0] == 10
    for k in range(len(training.merges) + 1):
        assert training.tokens_after(k) == len(ref.encode(text, training.merges[:k]))
    assert engine.train_detailed(text, 257).stop_reason == "vocab_size"


def test_a_lone_surrogate_is_a_value_error_that_says_where(engine):
    with pytest.raises(ValueError, match=r"text 1, character 2"):
        train(engine, ["fine", "ab\ud800c"], 300)
    with pytest.raises(ValueError, match="character 0"):
        engine.Vocabulary([]).encode("\udfff")


with_surrogates = st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
                         | st.sampled_from("a é中\n"), max_size=8)


@engine_settings
@given(items=st.lists(small_text | any_text | with_surrogates, max_size=6))
def test_the_compiled_packer_lays_texts_out_as_packing_does(items):
    """Training's start in the compiled engine is packed in C: the same bytes and starts as
    `packing.pack`, and for a lone surrogate the same message."""
    if "compiled" not in bpe.ENGINES:
        pytest.skip("the compiled engine is not built here")
    from analyzer.bpe import _engine, packing

    try:
        expected = packing.pack(items)
    except ValueError as error:
        with pytest.raises(ValueError) as found:
            _engine.pack(items)
        assert str(found.value) == str(error)
        return
    buffer, starts = _engine.pack(items)
    assert buffer == expected.buffer
    assert array("q", starts).tolist() == expected.starts


def test_the_compiled_packer_refuses_what_is_not_a_list_of_str():
    if "compiled" not in bpe.ENGINES:
        pytest.skip("the compiled engine is not built here")
    from analyzer.bpe import _engine

    with pytest.raises(TypeError, match="text 1 is int, not str"):
        _engine.pack(["fine", 3])
    with pytest.raises(TypeError, match="a list of str"):
        _engine.pack(("a", "b"))


def test_bad_arguments_are_rejected_clearly(engine):
    with pytest.raises(ValueError, match="below 256"):
        train(engine, "abc", 100)
    with pytest.raises(ValueError, match="tie_break"):
        train(engine, "abc", 300, tie_break="last")
    with pytest.raises(ValueError, match="min_pair_count"):
        train(engine, "abc", 300, min_pair_count=0)
    with pytest.raises(TypeError, match="text 1"):
        train(engine, ["abc", 3], 300)
    with pytest.raises(TypeError, match="bytes"):
        train(engine, b"abc", 300)
    with pytest.raises(ValueError, match="2 weights for 1 texts"):
        train(engine, ["abc"], 300, weights=[1, 2])
    for weight in (0, -1, 2**32, 1.5, True):
        with pytest.raises(ValueError, match="weight 0"):
            train(engine, ["abc"], 300, weights=[weight])


def test_the_vocabulary_size_limit_is_enforced(engine):
    assert train(engine, "abab", bpe.MAX_VOCAB_SIZE) == [((97, 98), 256)]
    with pytest.raises(ValueError, match="16,777,216"):
        train(engine, "abab", bpe.MAX_VOCAB_SIZE + 1)


def test_decode_names_an_unknown_id(engine):
    with pytest.raises(ValueError, match="unknown token id 256"):
        engine.Vocabulary([]).decode([97, 256])
    with pytest.raises(ValueError, match="-1"):
        engine.Vocabulary([]).decode([-1])


def test_count_tokens_rejects_sizes_the_merges_do_not_have(engine):
    merges = train(engine, "abab abab", 260)
    with pytest.raises(ValueError, match="255"):
        engine.Vocabulary(merges).count_tokens(["ab"], [255])
    with pytest.raises(ValueError, match=str(257 + len(merges))):
        engine.Vocabulary(merges).count_tokens(["ab"], [257 + len(merges)])


@pytest.mark.parametrize("merges, message", [
    ([((97, 98), 300)], "creates id 300"),
    ([((97, 256), 256)], "uses id 256"),
    ([("ab", 256)], "merge 0"),
])
def test_malformed_merge_lists_are_rejected(engine, merges, message):
    with pytest.raises(ValueError, match=message):
        engine.Vocabulary(merges)


def test_vocabulary_prepares_once_and_agrees_with_the_functions(engine):
    merges = train(engine, ["hello world, hello there"] * 3, 300)
    vocab = engine.Vocabulary(merges)
    assert vocab.size == 256 + len(merges)
    assert vocab.encode("hello") == ref.encode("hello", merges)
    assert vocab.token_bytes(merges[-1][1]) == bytes(ref.to_ids(ref.decode([merges[-1][1]], merges)))
    assert vocab.group_totals({"a": ["hello"], "b": ["hello", "there"]}) == {
        "a": (5, len(ref.encode("hello", merges))),
        "b": (10, len(ref.encode("hello", merges)) + len(ref.encode("there", merges)))}


# Adversarial inputs for compiled code: edges of sizes, alphabets and lengths.

@pytest.mark.slow
def test_one_byte_texts_and_every_character_below_256(engine):
    every = "".join(map(chr, range(256)))
    texts = [every, every[::-1], *every, "", every * 3]
    for tie_break in ("lexicographic", "first"):
        for min_count in (1, 2):
            options = dict(tie_break=tie_break, min_pair_count=min_count)
            merges = train(engine, texts, 700, **options)
            assert merges == ref.train_many(texts, 700, **options)
            vocabulary = engine.Vocabulary(merges)
            assert vocabulary.measure(texts, [700 if len(merges) >= 444 else 256 + len(merges)],
                                      roundtrip=True).roundtrip_ok


@pytest.mark.slow
def test_a_million_copies_of_one_byte(engine):
    n = 10**6
    training = engine.train_detailed("a" * n, 300)
    # Each merge joins two copies of the last token: its count is the run length minus one.
    length, expected = n, []
    for rank in range(len(training.merges)):
        previous = 97 if rank == 0 else 255 + rank
        expected.append(((previous, previous), 256 + rank))
        assert training.counts[rank] == length - 1
        length //= 2
    assert training.merges == expected and len(expected) == 19  # 2**19 <= 10**6 < 2**20
    counted = engine.Vocabulary(training.merges).count_tokens(["a" * n], [256, 257, 275])
    assert counted == {256: [n], 257: [n // 2], 275: [bin(n).count("1")]}


@pytest.mark.slow
def test_texts_longer_than_2_to_the_24_bytes(engine):
    """Positions past 2**24 in one string: the run-length structure of "ab" * m is known."""
    if engine is bpe.ENGINES["python"]:
        pytest.skip("the pure engine takes minutes on 17 MB; the compiled one is the one at risk")
    m = 2**23 + 12345  # 16.8 MB
    training = engine.train_detailed("ab" * m, 300)
    assert training.merges[0] == ((97, 98), 256) and training.counts[0] == m
    length = m
    for rank in range(1, len(training.merges)):
        assert training.merges[rank] == ((255 + rank, 255 + rank), 256 + rank)
        assert training.counts[rank] == length - 1
        length //= 2
    vocabulary = engine.Vocabulary(training.merges)
    size, k = vocabulary.size, len(training.merges) - 1  # the last token holds 2**k copies of "ab"
    expected = (m >> k) + bin(m & (2**k - 1)).count("1")
    assert vocabulary.count_tokens(["ab" * m], [size]) == {size: [expected]}
    assert vocabulary.decode(vocabulary.encode("ab" * m)) == "ab" * m


def test_training_in_threads_gives_the_same_merges(engine):
    corpus = [f"text {i} " * (i % 7 + 1) + "абвгд" * (i % 5) for i in range(400)]
    expected = train(engine, corpus, 600)
    results: list = [None] * 4

    def work(index):
        results[index] = train(engine, corpus, 600, tie_break="lexicographic")

    threads = [threading.Thread(target=work, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 4


def test_the_package_functions_use_the_active_engine():
    assert bpe.ENGINE in bpe.ENGINES
    assert bpe.Vocabulary is bpe.ENGINES[bpe.ENGINE].Vocabulary
    merges = bpe.train(["abab", "ab"], 300, weights=[1, 2])
    assert merges == ref.train_many(["abab", "ab", "ab"], 300)
    assert bpe.count_tokens(["abab", "ab"], merges, [257], weights=[1, 2]) == {257: [2, 1]}
    with pytest.raises(ValueError, match="weight 1"):
        bpe.count_tokens(["abab", "ab"], merges, [257], weights=[1, 0])


@st.composite
def merge_lists(draw):
    """Merge lists no training would make: pairs repeated, an id merged with many others (long
    partner lists), ids from a small set so the lists overlap."""
    merges = []
    for rank in range(draw(st.integers(0, 80))):
        ids = st.sampled_from([97, 98, 99, 32]) | st.integers(256, 255 + rank) if rank else \
            st.sampled_from([97, 98, 99, 32])
        merges.append(((draw(ids), draw(ids)), 256 + rank))
    return merges


@pytest.mark.slow
@engine_settings
@given(merges=merge_lists(), texts=st.lists(st.text(alphabet="abc ", max_size=60), max_size=4),
       data=st.data())
def test_any_valid_merge_list_replays_like_the_reference(engine, merges, texts, data):
    vocabulary = engine.Vocabulary(merges)
    sizes = data.draw(st.lists(st.integers(256, 256 + len(merges)), min_size=1, max_size=4))
    counted = vocabulary.count_tokens(texts, sizes)
    for size in sizes:
        assert counted[size] == [len(ref.encode(text, merges[: size - 256])) for text in texts]
    for text in texts:
        assert vocabulary.encode(text) == ref.encode(text, merges)
