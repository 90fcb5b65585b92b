"""The lean compiled engine (issue 54): a weight per text found through a window index, each
pair's positions as LEB128 deltas, and a source's tables laid out one language at a time
(`ChunkTables`). Each is checked against the literal reference: positions whose distances
cross the varint boundaries (2**7, 2**14, 2**21), texts in any order of weight, weights up to
2**32 - 1, many tiny texts to a window, and rescans forced by a high floor."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import bpe
from analyzer.bpe import reference as ref
from analyzer.bpe.by_language import ChunkCounts, ChunkTables, train_by_language
from analyzer.bpe.packing import PackedChunks

compiled = pytest.importorskip("analyzer.bpe.compiled")

lean_settings = settings(max_examples=60, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow])
tie_breaks = st.sampled_from(["lexicographic", "first"])

# Distances either side of each LEB128 length: 1 byte below 2**7, 2 below 2**14, ...
BOUNDARIES = [1, 2, 126, 127, 128, 129, 16382, 16383, 16384, 16385]


def spaced(gaps: list[int], filler: str) -> str:
    """'ab' occurrences `gap` bytes apart (filler between), so the pair's list holds those
    distances."""
    return "ab" + "".join(filler * max(gap - 2, 0) + "ab" for gap in gaps)


@lean_settings
@given(gaps=st.lists(st.sampled_from(BOUNDARIES) | st.integers(1, 40000), min_size=1, max_size=6),
       filler=st.sampled_from(["c", "cd", "é"]), size=st.integers(257, 262),
       tie_break=tie_breaks, floor=st.sampled_from([0, 2, 5]))
def test_positions_at_the_varint_boundaries_train_as_the_reference(gaps, filler, size, tie_break,
                                                                   floor):
    texts = [spaced(gaps, filler), spaced(list(reversed(gaps)), filler)]
    expected = ref.train_many(texts, size, tie_break=tie_break)
    assert compiled.train_detailed(texts, size, tie_break=tie_break, floor=floor).merges == expected


def test_a_distance_past_2_to_the_21_bytes():
    """A pair's list with a 4-byte delta: the compiled engine agrees with the pure one."""
    texts = [spaced([2**21 + 3, 5, 2**21 - 1], "c"), "abab"]
    expected = bpe.ENGINES["python"].train_detailed(texts, 259).merges
    assert compiled.train_detailed(texts, 259).merges == expected
    assert compiled.train_detailed(texts, 259, floor=3).merges == expected


weighted_texts = st.lists(st.tuples(st.text(alphabet="ab c", max_size=12), st.integers(1, 4)),
                          min_size=1, max_size=40)


@lean_settings
@given(pairs=weighted_texts, size=st.integers(256, 300), floor=st.sampled_from([0, 3]))
def test_many_short_texts_of_their_own_weights_train_as_the_reference(pairs, size, floor):
    """Many texts to a window of the text index (chunks of a byte or two), each its own
    weight: a position's weight is its text's."""
    texts = [text for text, _ in pairs]
    weights = [weight for _, weight in pairs]
    expanded = [text for text, weight in pairs for _ in range(weight)]
    expected = ref.train_many(expanded, size)
    assert compiled.train_detailed(texts, size, weights=weights, floor=floor).merges == expected


@lean_settings
@given(pairs=weighted_texts, size=st.integers(256, 300), descending=st.booleans())
def test_texts_in_order_of_weight_learn_the_same_merges(pairs, size, descending):
    """With lexicographic ties the merges do not depend on the texts' order: sorted by weight
    (equal weights together), they are the reference's."""
    ordered = sorted(pairs, key=lambda pair: pair[1], reverse=descending)
    expanded = [text for text, weight in pairs for _ in range(weight)]
    expected = ref.train_many(expanded, size)
    training = compiled.train_detailed([t for t, _ in ordered], size, weights=[w for _, w in ordered])
    assert training.merges == expected


@lean_settings
@given(pairs=st.lists(st.tuples(st.text(alphabet="ab c", max_size=10),
                                st.sampled_from([1, 2, 2**31, 2**32 - 2, 2**32 - 1])),
                      min_size=1, max_size=8),
       tie_break=tie_breaks, floor=st.sampled_from([0, 3]))
def test_weights_up_to_2_to_the_32_agree_with_the_pure_engine(pairs, tie_break, floor):
    texts = [text for text, _ in pairs]
    weights = [weight for _, weight in pairs]
    expected = bpe.ENGINES["python"].train_detailed(texts, 290, weights=weights, tie_break=tie_break)
    training = compiled.train_detailed(texts, 290, weights=weights, tie_break=tie_break, floor=floor)
    assert (training.merges, training.counts) == (expected.merges, expected.counts)


def packed_counts(chunks: list[str], counts: list[int]) -> ChunkCounts:
    """ChunkCounts as a source's table holds them (PackedChunks)."""
    data = [chunk.encode() for chunk in chunks]
    offsets = [0]
    for piece in data:
        offsets.append(offsets[-1] + len(piece))
    return ChunkCounts(PackedChunks(b"".join(data), offsets), counts)


language_chunks = st.dictionaries(
    st.sampled_from(["eng", "fra", "kor"]),
    st.dictionaries(st.text(alphabet="ab c", min_size=1, max_size=8), st.integers(1, 5),
                    min_size=1, max_size=12), min_size=1, max_size=3)


@lean_settings
@given(languages=language_chunks, size=st.integers(256, 290), parity=st.booleans(),
       weights=st.dictionaries(st.sampled_from(["eng", "fra", "kor"]), st.integers(1, 3)))
def test_chunk_tables_read_each_language_once_and_train_as_a_dict(languages, size, parity,
                                                                  weights):
    weights = {lang: w for lang, w in weights.items() if lang in languages}
    read: list[str] = []

    def load(lang: str) -> ChunkCounts:
        read.append(lang)
        return packed_counts(list(languages[lang]), list(languages[lang].values()))

    tables = ChunkTables(list(languages), load)
    as_dict = {lang: load(lang) for lang in languages}
    read.clear()
    options = {"parity": parity, "weights": weights, "pretokenizer": "none"}
    lean = train_by_language(tables, size, **options)
    assert sorted(read) == sorted(languages)  # each once, none kept
    assert lean == train_by_language(as_dict, size, **options)
    if not parity:  # the merges of all chunks, each its count times its language's weight
        expanded = [chunk for lang, chunks in languages.items() for chunk, count in chunks.items()
                    for _ in range(count * weights.get(lang, 1))]
        assert lean.merges == ref.train_many(expanded, size)


def test_chunk_tables_refuse_counts_that_do_not_match_their_chunks():
    tables = ChunkTables(["eng"], lambda lang: packed_counts(["ab", "c"], [3]))
    with pytest.raises(ValueError, match="eng: 2 chunks but 1 counts"):
        train_by_language(tables, 300, pretokenizer="none")
    with pytest.raises(KeyError):
        tables["fra"]
