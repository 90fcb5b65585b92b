"""Engine == reference on real multilingual text (UDHR, from ../shared when present)."""

from __future__ import annotations

import pytest

from analyzer import bpe
from analyzer.bpe import reference as ref

LANGUAGES = ["eng_Latn", "rus_Cyrl", "kor_Hang", "jpn_Jpan", "hin_Deva", "arb_Arab", "tha_Thai",
             "ell_Grek"]


def units(folder, languages, first, count):
    texts = []
    for language in languages:
        lines = (folder / f"{language}.txt").read_text(encoding="utf-8").splitlines()
        texts.extend(lines[first:first + count])
    return texts


def test_shared_training_on_eight_scripts_matches_reference(udhr_text):
    texts = units(udhr_text, LANGUAGES, 0, 3)
    expected = ref.train_many(texts, 2000)
    assert len(expected) > 1000
    assert bpe.train(texts, 2000) == expected


@pytest.mark.parametrize("language", ["eng_Latn", "kor_Hang", "tha_Thai"])
def test_per_language_training_first_tie_break_min_count_one(udhr_text, language):
    texts = units(udhr_text, [language], 0, 4)
    expected = ref.train_many(texts, 1200, min_pair_count=1, tie_break="first")
    assert bpe.train(texts, 1200, min_pair_count=1, tie_break="first") == expected


def test_counts_and_ids_on_held_out_text_match_reference(udhr_text):
    merges = bpe.train(units(udhr_text, LANGUAGES, 0, 4), 1500)
    held_out = units(udhr_text, LANGUAGES, 10, 2)
    sizes = [256, 300, 512, 1024, 256 + len(merges)]
    counted = bpe.count_tokens(held_out, merges, sizes)
    for size in sizes:
        prefix = merges[: size - 256]
        assert counted[size] == [len(ref.encode(text, prefix)) for text in held_out]
    for text in held_out:
        ids = bpe.encode(text, merges)
        assert ids == ref.encode(text, merges)
        assert bpe.decode(ids, merges) == text
