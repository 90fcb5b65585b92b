"""Training by language, on both engines: parity-aware merges equal to the literal
`reference.train_parity`, and each merge's replacements per language equal to what the
reference's own encoding shows, on small alphabets (the hard cases) and on real text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import bpe
from analyzer.bpe import by_language
from analyzer.bpe import reference as ref
from analyzer.bpe.pretokenize import PRETOKENIZERS
from helpers import shared_corpus

small_text = st.text(alphabet="ab", max_size=16) | st.text(alphabet="ab c", max_size=16) | \
    st.text(alphabet="aé中 ", max_size=10)
language_texts = st.dictionaries(st.sampled_from(["eng_Latn", "kor_Hang", "rus_Cyrl", "tha_Thai"]),
                                 st.lists(small_text, min_size=1, max_size=4), min_size=1, max_size=4)
sizes = st.integers(min_value=256, max_value=290)
tie_breaks = st.sampled_from(["lexicographic", "first"])

engine_settings = settings(max_examples=200, deadline=None,
                           suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])


@pytest.fixture
def on(engine, monkeypatch):
    """analyzer.bpe's by-language training, on the engine under test."""
    monkeypatch.setattr(by_language, "engine", engine)
    return engine


@pytest.mark.slow
@engine_settings
@given(texts=language_texts, size=sizes, tie_break=tie_breaks, min_count=st.sampled_from([1, 2, 3]),
       global_merges=st.integers(0, 6), data=st.data())
def test_parity_equals_the_reference(on, texts, size, tie_break, min_count, global_merges, data):
    held_out = data.draw(st.booleans())
    dev = {lang: data.draw(st.lists(small_text, min_size=1, max_size=3)) for lang in texts} \
        if held_out else None
    weights = {lang: data.draw(st.integers(1, 3)) for lang in texts} if data.draw(st.booleans()) else None
    got = bpe.train_parity(texts, size, dev=dev, global_merges=global_merges, min_pair_count=min_count,
                           tie_break=tie_break, weights=weights)
    # The reference has no weights: a text of weight w is w copies of itself, in place, and the
    # dev texts stay the texts as given.
    repeated = {lang: [t for t in texts[lang] for _ in range((weights or {}).get(lang, 1))]
                for lang in texts}
    expected = ref.train_parity(repeated, size, dev=dev if dev is not None else texts,
                                global_merges=global_merges, min_pair_count=min_count,
                                tie_break=tie_break)
    assert got == expected


@pytest.mark.slow
@engine_settings
@given(texts=language_texts, size=sizes, tie_break=tie_breaks,
       pretokenizer=st.sampled_from(["words", "gpt2", "cl100k"]), data=st.data())
def test_parity_on_chunks_equals_the_reference(on, texts, size, tie_break, pretokenizer, data):
    """With a pre-tokenizer each distinct chunk is one text whose weight and multiplicity are
    its count (the engine then reads a text's multiplicity from its weight: see groups.c); with
    language weights or dev texts they differ, and each text carries its own."""
    pattern = PRETOKENIZERS[pretokenizer]

    def chunks(items):
        return [chunk for text in items for chunk in ref.pretokenize(text, pattern)]

    dev = {lang: data.draw(st.lists(small_text, min_size=1, max_size=3)) for lang in texts} \
        if data.draw(st.booleans()) else None
    weights = {lang: data.draw(st.integers(1, 3)) for lang in texts} if data.draw(st.booleans()) else None
    got = bpe.train_parity(texts, size, dev=dev, pretokenizer=pretokenizer, tie_break=tie_break,
                           weights=weights)
    repeated = {lang: chunks([t for t in texts[lang] for _ in range((weights or {}).get(lang, 1))])
                for lang in texts}
    measured = {lang: chunks((dev or texts)[lang]) for lang in texts}
    assert got == ref.train_parity(repeated, size, dev=measured, tie_break=tie_break)


@pytest.mark.slow
@engine_settings
@given(texts=language_texts, size=sizes, tie_break=tie_breaks)
def test_each_merge_s_replacements_per_language(on, texts, size, tie_break):
    """Not parity-aware: the shared merges, and what each did in each language, as the
    reference shows it (tokens before the merge minus tokens after, in the language's texts)."""
    result = bpe.train_by_language(texts, size, tie_break=tie_break)
    everything = [text for lang in texts for text in texts[lang]]
    assert result.merges == ref.train_many(everything, size, tie_break=tie_break)
    assert result.chosen == [None] * len(result.merges)
    for lang, replaced in result.replaced_by_language.items():
        sequences = [ref.to_ids(text) for text in texts[lang]]
        for rank, (pair, new_id) in enumerate(result.merges):
            merged = [ref.merge(ids, pair, new_id) for ids in sequences]
            assert replaced[rank] == sum(map(len, sequences)) - sum(map(len, merged))
            sequences = merged
    assert [sum(column) for column in zip(*result.replaced_by_language.values())] == result.replaced


@pytest.mark.slow
@engine_settings
@given(texts=language_texts, size=sizes, data=st.data())
def test_token_statistics_equal_the_reference_encoding_at_every_size(engine, texts, size, data):
    """Each language's token histogram at each size, and each merge's replacements in it,
    from one replay: as encoding with the merge list cut at that size shows them."""
    merges = ref.train_many([text for lang in texts for text in texts[lang]], size,
                            min_pair_count=1)
    measured = {lang: data.draw(st.lists(small_text, max_size=3)) for lang in texts}
    cut_at = sorted(set(data.draw(st.lists(st.integers(256, 256 + len(merges)), min_size=1,
                                           max_size=3))))
    pretokenizer = data.draw(st.sampled_from(["none", "words"]))
    vocabulary = engine.Vocabulary(merges, pretokenizer)
    found = vocabulary.token_statistics(list(measured.values()), cut_at)
    pattern = PRETOKENIZERS[pretokenizer]
    for lang, statistics in zip(measured, found):
        for size_cut in cut_at:
            histogram: dict[int, int] = {}
            for text in measured[lang]:
                for token in ref.encode_chunks(text, merges[:size_cut - 256], pattern):
                    histogram[token] = histogram.get(token, 0) + 1
            assert statistics.histograms[size_cut] == histogram, (lang, size_cut)
        lengths = [sum(len(ref.encode_chunks(text, merges[:k], pattern)) for text in measured[lang])
                   for k in range(len(merges) + 1)]
        assert statistics.replaced == [a - b for a, b in zip(lengths, lengths[1:])]


@pytest.mark.parametrize("pretokenizer", ["words", "gpt2"])
def test_with_a_pretokenizer_each_language_trains_on_its_chunks(on, pretokenizer):
    texts = {"eng_Latn": ["the cat sat on the mat", "the mat, the cat"],
             "rus_Cyrl": ["кот сидел на коврике", "кот и кот"],
             "kor_Hang": ["고양이가 앉았다 the cat", "고양이 고양이"]}
    pattern = PRETOKENIZERS[pretokenizer]
    chunks = {lang: [c for t in items for c in ref.pretokenize(t, pattern)] for lang, items in texts.items()}
    for tie_break in ("lexicographic", "first"):
        got = bpe.train_parity(texts, 300, pretokenizer=pretokenizer, tie_break=tie_break)
        assert got == ref.train_parity(chunks, 300, tie_break=tie_break)
        shared = bpe.train_by_language(texts, 300, pretokenizer=pretokenizer, tie_break=tie_break)
        assert shared.merges == bpe.train([t for items in texts.values() for t in items], 300,
                                          pretokenizer=pretokenizer, tie_break=tie_break)


def test_parity_serves_the_worst_compressed_language_first():
    texts = {"eng_Latn": ["aaaaaaaa"], "kor_Hang": ["bcdbcdbcd"]}
    result = bpe.train_by_language(texts, 258, parity=True)
    assert result.chosen == ["kor_Hang", "eng_Latn"]
    assert result.counts == [3, 7]  # each the chooser's own count
    assert result.replaced_by_language == {"eng_Latn": [0, 4], "kor_Hang": [3, 0]}
    hybrid = bpe.train_by_language(texts, 258, parity=True, global_merges=1)
    assert hybrid.chosen == [None, "kor_Hang"] and hybrid.merges[0] == ((97, 97), 256)


def test_a_language_with_no_pair_left_is_passed_over(on):
    """English has the most tokens but no pair occurring twice: it never gets a merge, and each
    merge goes to the next worst language, until Korean too has nothing left (the compiled
    engine marks such a language exhausted once, and passes over it from then on)."""
    texts = {"eng_Latn": ["abcdefghijklmnopqrstuvwxyz"], "kor_Hang": ["xyxyxyxy zwzw"],
             "rus_Cyrl": ["пппп"]}
    got = bpe.train_by_language(texts, 280, parity=True)
    assert got.merges == ref.train_parity(texts, 280)
    assert "eng_Latn" not in got.chosen and got.stop_reason == "min_pair_count"
    for tie_break in ("lexicographic", "first"):
        assert bpe.train_parity(texts, 280, tie_break=tie_break) == \
            ref.train_parity(texts, 280, tie_break=tie_break)


@pytest.mark.slow
@pytest.mark.corpora
def test_real_multilingual_text_equals_the_reference(on):
    folder = shared_corpus("udhr")
    languages = ["eng_Latn", "hin_Deva", "kor_Hang", "mya_Mymr", "tha_Thai", "yor_Latn"]
    texts = {lang: (folder / f"{lang}.txt").read_text(encoding="utf-8").splitlines()[:3]
             for lang in languages}
    dev = {lang: (folder / f"{lang}.txt").read_text(encoding="utf-8").splitlines()[3:5]
           for lang in languages}
    for options in ({}, {"dev": dev, "global_merges": 10}):
        got = bpe.train_parity(texts, 300, **options)
        assert got == ref.train_parity(texts, 300, **options)


@engine_settings
@given(texts=language_texts, size=sizes, tie_break=tie_breaks, floor=st.integers(3, 12),
       global_merges=st.integers(0, 6), data=st.data())
def test_the_compiled_count_floor_changes_nothing(texts, size, tie_break, floor, global_merges, data):
    """The compiled engine keeps only pairs above a count floor at first (on large texts) and
    recounts whenever the best, or a language's best, falls below it. Forced high on small
    texts, the recounts happen all the time: the results must not change."""
    if "compiled" not in bpe.ENGINES:
        pytest.skip("the compiled engine is not built here")
    compiled, pure = bpe.ENGINES["compiled"], bpe.ENGINES["python"]
    flat, groups = [], []
    for group, lang in enumerate(sorted(texts)):
        flat += texts[lang]
        groups += [group] * len(texts[lang])
    weights = [data.draw(st.integers(0, 3)) for _ in flat]
    for parity in (True, False):
        options = dict(weights=weights, parity=parity, global_merges=global_merges, tie_break=tie_break)
        assert compiled.train_grouped(flat, groups, size, floor=floor, **options) == \
            pure.train_grouped(flat, groups, size, **options)
    expected = ref.train_many(flat, size, tie_break=tie_break)
    assert compiled.train_detailed(flat, size, tie_break=tie_break, floor=floor).merges == expected


@pytest.mark.slow
@engine_settings
@given(n_languages=st.integers(9, 16), size=sizes, tie_break=tie_breaks,
       floor=st.sampled_from([0, 3, 8]), data=st.data())
def test_many_languages_change_nothing(n_languages, size, tie_break, floor, data):
    """A pair in many languages (here, on two letters, most pairs) keeps its counts per
    language in the compiled engine as a full list, one entry per language, read at the
    language's index; with a floor forced high, the lists are rebuilt at each recount. Against
    the pure engine (itself the reference's, above), with 9 to 16 languages."""
    if "compiled" not in bpe.ENGINES:
        pytest.skip("the compiled engine is not built here")
    text = st.text(alphabet="ab", min_size=4, max_size=16) | small_text
    flat, groups = [], []
    for group in range(n_languages):
        texts = data.draw(st.lists(text, min_size=1, max_size=3))
        flat += texts
        groups += [group] * len(texts)
    weights = [data.draw(st.integers(0, 3)) for _ in flat]
    options = dict(weights=weights, parity=True, global_merges=data.draw(st.integers(0, 4)),
                   tie_break=tie_break)
    assert bpe.ENGINES["compiled"].train_grouped(flat, groups, size, floor=floor, **options) == \
        bpe.ENGINES["python"].train_grouped(flat, groups, size, **options)


@pytest.mark.slow
@pytest.mark.corpora
def test_the_engines_agree_on_real_text_at_scale():
    """Hundreds of kilobytes of news in eight languages, weighted, with a hybrid start."""
    if "compiled" not in bpe.ENGINES:
        pytest.skip("the compiled engine is not built here")
    folder = shared_corpus("ntrex128")
    languages = ["amh_Ethi", "eng_Latn", "hin_Deva", "kor_Hang", "rus_Cyrl", "tha_Thai",
                 "yor_Latn", "zho_Hans"]
    flat, groups = [], []
    for group, lang in enumerate(languages):
        lines = (folder / f"{lang}.txt").read_text(encoding="utf-8").splitlines()[:300]
        flat += lines
        groups += [group] * len(lines)
    options = dict(parity=True, weights=[1 + g % 2 for g in groups], global_merges=50)
    compiled = bpe.ENGINES["compiled"].train_grouped(flat, groups, 1256, **options)
    assert compiled == bpe.ENGINES["python"].train_grouped(flat, groups, 1256, **options)
    assert len(set(compiled.chosen)) == len(languages) + 1


@pytest.mark.parametrize("call, message", [
    (lambda: bpe.train_parity({}, 300), "no languages"),
    (lambda: bpe.train_parity({"eng": ["a"]}, 300, dev={"kor": ["b"]}), "same languages"),
    (lambda: bpe.train_by_language({"eng": ["a"]}, 300, dev={"eng": ["b"]}), "parity-aware"),
    (lambda: bpe.train_parity({"eng": ["a"]}, 300, weights={"kor": 2}), "no texts"),
    (lambda: bpe.train_parity({"eng": ["a"]}, 300, weights={"eng": 0}), "from 1"),
    (lambda: bpe.train_parity({"eng": ["a"]}, 300, global_merges=-1), "global_merges"),
    (lambda: bpe.train_parity({"eng": ["a"]}, 200), "below 256"),
])
def test_bad_arguments_say_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("name", ["python", "compiled"])
def test_groups_out_of_order_are_refused_by_either_engine(name):
    if name not in bpe.ENGINES:
        pytest.skip("the compiled engine is not built here")
    from analyzer.bpe.contract import GROUP_ORDER

    with pytest.raises(ValueError, match=GROUP_ORDER):
        bpe.ENGINES[name].train_grouped(["ab", "cd", "ef"], [0, 1, 0], 300, parity=True)
