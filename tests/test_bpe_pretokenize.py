"""Pre-tokenization: both engines equal the reference on chunk lists, for every built-in
pattern and both tie-breaks; every built-in pattern is lossless on every language of the real
corpora; a pattern that loses text is refused, saying where."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import bpe
from analyzer.bpe import reference as ref
from analyzer.bpe.pretokenize import (
    PRETOKENIZERS,
    SPLIT_AROUND,
    PretokenizerError,
    chunk_texts,
    resolve,
)
from helpers import shared_corpus

BUILT_IN = [name for name in PRETOKENIZERS if name != "none"]

# What splits differently: whitespace runs, CR/LF, digits, punctuation, apostrophes, case,
# combining marks, and scripts written without spaces.
pieces = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", "123", "4567", "1,234.5",
                          "'s", "'LL", "don't", "!", "...", "?!", "/", "—", "Hello", "world", "Ünïcode",
                          "кот", "Ελλάδα", "中文字", "日本語のテキスト", "ภาษาไทย", "မြန်မာ", "ខ្មែរ",
                          "ລາວ", "한국어", "हिन्दी", "e\u0301", "\u0301", "😀", "x\u200dy", "ABC", "aBc"])
texts_with_structure = st.lists(st.lists(pieces, max_size=12).map("".join), max_size=4)
random_unicode = st.lists(st.text(max_size=40), max_size=4)

engine_settings = settings(max_examples=120, deadline=None,
                           suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])


def all_chunks(texts, pattern, around=False):
    return [chunk for text in texts for chunk in ref.pretokenize(text, pattern, around)]


@engine_settings
@given(texts=texts_with_structure | random_unicode, name=st.sampled_from(BUILT_IN),
       tie_break=st.sampled_from(["lexicographic", "first"]), min_count=st.sampled_from([1, 2]),
       size=st.integers(256, 330))
def test_training_on_chunks_equals_the_reference_on_the_chunk_list(engine, texts, name, tie_break,
                                                                   min_count, size):
    expected = ref.train_many(all_chunks(texts, PRETOKENIZERS[name], name in SPLIT_AROUND), size, min_pair_count=min_count,
                              tie_break=tie_break)
    chunked = chunk_texts(texts, resolve(name))
    got = engine.train_detailed(chunked.chunks, size, weights=chunked.counts,
                                min_pair_count=min_count, tie_break=tie_break).merges
    assert got == expected


@engine_settings
@given(texts=texts_with_structure | random_unicode, name=st.sampled_from(BUILT_IN),
       other=st.text(max_size=30), data=st.data())
def test_encoding_and_counting_go_chunk_by_chunk(engine, texts, name, other, data):
    pattern, around = PRETOKENIZERS[name], name in SPLIT_AROUND
    chunked = chunk_texts(texts, resolve(name))
    merges = engine.train_detailed(chunked.chunks, 320, weights=chunked.counts,
                                   min_pair_count=1).merges
    vocabulary = engine.Vocabulary(merges, name)
    for text in [*texts, other]:
        ids = vocabulary.encode(text)
        assert ids == ref.encode_chunks(text, merges, pattern, around)
        assert vocabulary.decode(ids) == text
    sizes = data.draw(st.lists(st.integers(256, 256 + len(merges)), min_size=1, max_size=3))
    counted = vocabulary.measure([*texts, other], sizes, roundtrip=True)
    for size in sizes:
        assert counted.counts[size] == [len(ref.encode_chunks(t, merges[: size - 256], pattern,
                                                              around))
                                        for t in [*texts, other]]
    assert counted.roundtrip_ok is True


def test_the_package_api_takes_the_pretokenizer_and_weights_together():
    texts = ["the cat, the cat", "der Hund"]
    merges = bpe.train(texts, 300, pretokenizer="gpt2", weights=[3, 1])
    pattern = PRETOKENIZERS["gpt2"]
    expanded = [texts[0]] * 3 + [texts[1]]
    assert merges == ref.train_many(all_chunks(expanded, pattern), 300)
    assert bpe.encode("the cat", merges, pretokenizer="gpt2") == \
        ref.encode_chunks("the cat", merges, pattern)
    size = 256 + len(merges)
    assert bpe.count_tokens(texts, merges, [size], pretokenizer="gpt2") == \
        {size: [len(ref.encode_chunks(t, merges, pattern)) for t in texts]}
    user = bpe.train(texts, 300, pretokenizer=r"re:\w+|\W+")
    assert user == ref.train_many(all_chunks(texts, r"\w+|\W+"), 300)


def test_chunks_are_counted_once_in_order_of_first_appearance():
    chunked = chunk_texts(["b a", "a b a"], resolve("words"), weights=[2, 1])
    assert chunked.chunks == ["b", " a", "a", " b"]
    assert chunked.counts == [2, 2 + 1, 1, 1]
    assert chunked.of_text == [[0, 1], [2, 3, 1]]


@pytest.mark.parametrize("spec, message", [
    ("re:\\w+", "pre-tokenizer re:\\w+ loses text: text 1, character 2 (' b') is in no chunk"),
    ("re:[a-z]", "text 1, character 2"),
    ("re:(", "not a regular expression"),
    ("re:", "empty pattern"),
    ("cl100", "unknown pre-tokenizer 'cl100': use one of none, words, gpt2, cl100k, o200k, llama3"),
])
def test_a_pattern_that_loses_text_or_is_not_one_is_refused(spec, message):
    with pytest.raises(PretokenizerError) as caught:
        bpe.train(["aa", "ab b"], 300, pretokenizer=spec)
    assert message in str(caught.value)


@pytest.mark.slow
@pytest.mark.corpora
@pytest.mark.parametrize("corpus", ["udhr", "ntrex128"])
def test_every_built_in_pattern_is_lossless_on_every_language_of_the_real_corpora(corpus):
    folder = shared_corpus(corpus)
    for path in sorted(folder.glob("*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for name in BUILT_IN:
            pretokenizer = resolve(name)
            for index, line in enumerate(lines):
                pretokenizer.split(line, index)  # raises, naming the line, if it loses text
