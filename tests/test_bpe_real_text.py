"""Both engines == reference on real multilingual text (UDHR, from ../shared when present)."""

from __future__ import annotations

import pytest

from analyzer.bpe import reference as ref

LANGUAGES = ["eng_Latn", "rus_Cyrl", "kor_Hang", "jpn_Jpan", "hin_Deva", "arb_Arab", "tha_Thai",
             "ell_Grek"]


def units(folder, languages, first, count):
    texts = []
    for language in languages:
        lines = (folder / f"{language}.txt").read_text(encoding="utf-8").splitlines()
        texts.extend(lines[first:first + count])
    return texts


@pytest.mark.slow
@pytest.mark.corpora
def test_shared_training_on_eight_scripts_matches_reference(engine, udhr_text):
    texts = units(udhr_text, LANGUAGES, 0, 3)
    expected = ref.train_many(texts, 2000)
    assert len(expected) > 1000
    assert engine.train_detailed(texts, 2000).merges == expected


@pytest.mark.slow
@pytest.mark.corpora
@pytest.mark.parametrize("language", ["eng_Latn", "kor_Hang", "tha_Thai"])
def test_per_language_training_first_tie_break_min_count_one(engine, udhr_text, language):
    texts = units(udhr_text, [language], 0, 4)
    expected = ref.train_many(texts, 1200, min_pair_count=1, tie_break="first")
    assert engine.train_detailed(texts, 1200, min_pair_count=1, tie_break="first").merges == expected


@pytest.mark.slow
@pytest.mark.corpora
def test_counts_and_ids_on_held_out_text_match_reference(engine, udhr_text):
    merges = engine.train_detailed(units(udhr_text, LANGUAGES, 0, 4), 1500).merges
    vocabulary = engine.Vocabulary(merges)
    held_out = units(udhr_text, LANGUAGES, 10, 2)
    sizes = [256, 300, 512, 1024, 256 + len(merges)]
    counted = vocabulary.count_tokens(held_out, sizes)
    for size in sizes:
        prefix = merges[: size - 256]
        assert counted[size] == [len(ref.encode(text, prefix)) for text in held_out]
    for text in held_out:
        ids = vocabulary.encode(text)
        assert ids == ref.encode(text, merges)
        assert vocabulary.decode(ids) == text
