"""The field's metrics of production tokenizers, checked against their libraries by another
path: the words their tokens split (tokka-bench's word_split_pct; tiktoken's own offsets), the
scripts of their vocabularies, the Jaccard overlap of two vocabularies (tiktoken's own ranks),
and fertility per character where words are not written apart; in export, show and the
report."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyzer.bpe.words import split_words
from analyzer.external.vocabulary import token_script
from helpers import cli_output, invoke, resolve_or_skip

TEXTS = {"eng_Latn": ["The cat sat on the mat, quietly.", "Unbelievably, antidisestablishment."],
         "rus_Cyrl": ["Кошка сидела на коврике.", "Невероятно длинное слово."],
         "zho_Hans": ["猫坐在垫子上。", "难以置信的长词。"]}


@given(st.lists(st.text(alphabet="ab c\u00e9\u4e00", min_size=1), min_size=1, max_size=8))
def test_split_words_counts_words_with_a_boundary_inside(pieces):
    text = "".join(pieces)
    encoded = [piece.encode() for piece in pieces]
    # The reference: a word is split when a piece starts strictly inside its characters.
    starts, at = set(), 0
    for piece in pieces:
        starts.add(at)
        at += len(piece)
    expected = sum(1 for word in re.finditer(r"\S+", text)
                   if any(word.start() < start < word.end() for start in starts))
    assert split_words(text, encoded) == expected
    assert split_words(text, [b" ", *encoded]) == expected  # SentencePiece's leading space
    assert split_words(text + "x", encoded) is None  # tokens that do not spell the text


def test_a_tokens_script_is_its_letters():
    assert token_script("ⅷ".encode()) == "None"  # a number, not a letter
    assert token_script(" ́".encode()) == "None"  # a combining mark alone
    assert token_script("é".encode()) == token_script("é".encode()) == "Latin"


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    for name in ("cl100k_base", "gpt2"):
        resolve_or_skip(name)
    root = tmp_path_factory.mktemp("vocabularies")
    (root / "corpus").mkdir()
    for lang, lines in TEXTS.items():
        (root / "corpus" / f"{lang}.txt").write_text("\n".join(lines) + "\n")
    db = root / "v.db"
    cli_output(db, "ingest", root / "corpus")
    cli_output(db, "run", "--tokenizer", "cl100k_base", "--tokenizer", "gpt2",
               "--out", root / "reports")
    return db, root


@pytest.mark.slow
def test_word_splits_agree_with_tiktokens_own_offsets(measured):
    db, _ = measured
    records = json.loads(cli_output(db, "export", "1"))["records"]
    encoding = cl100k_encoding()
    found = {(r["vocab"], r["lang"]): r for r in records}
    for lang, lines in TEXTS.items():
        record = found[("cl100k_base", lang)]
        if lang == "zho_Hans":
            assert record["word_split_pct"] is None and record["fertility"] is None
            assert record["char_fertility"] == pytest.approx(
                record["tokens"] / sum(len(line) for line in lines))
            continue
        assert record["char_fertility"] is None
        split = words = 0
        for line in lines:
            _, offsets = encoding.decode_with_offsets(encoding.encode_ordinary(line))
            for word in re.finditer(r"\S+", line):
                words += 1
                split += any(word.start() < start < word.end() for start in offsets)
        assert record["word_split_pct"] == pytest.approx(100 * split / words)


def cl100k_encoding():
    """tiktoken's own cl100k_base, built from the catalog's files on this machine (never a
    download)."""
    import tiktoken

    from analyzer.external.catalog import entry
    from analyzer.external.formats import openai_arguments
    from analyzer.external.tokenizers import catalog_files

    item = entry("cl100k_base")
    found = catalog_files(item, downloads=False)
    return tiktoken.Encoding(**openai_arguments(
        "cl100k_base", {name: f.data for name, f in found.items()},
        {f.name: f.sha256 for f in item.files}))


def test_vocabulary_scripts_and_overlaps_are_stored_and_shown(measured):
    db, root = measured
    document = json.loads(cli_output(db, "show", "1", "--json"))
    scripts = [row for row in document["vocabulary_scripts"] if row["tokenizer"] == "cl100k_base"]
    tokenizer = resolve_or_skip("cl100k_base")
    tokens = tokenizer.tokens()
    assert sum(row["tokens"] for row in scripts) == len(tokens) == 100256
    assert sum(row["share"] for row in scripts) == pytest.approx(1.0)
    assert scripts[0]["script"] == "Latin"
    (overlap,) = document["vocabulary_overlaps"]
    gpt2 = set(resolve_or_skip("gpt2").tokens())
    assert (overlap["tokenizer"], overlap["other"]) == ("cl100k_base", "gpt2")
    assert overlap["shared"] == len(set(tokens) & gpt2)
    assert overlap["either"] == len(set(tokens) | gpt2)
    assert overlap["jaccard"] == pytest.approx(overlap["shared"] / overlap["either"])
    # a terminal wide enough for the table, whatever this machine's is (at 40 columns the
    # overlap's cell is folded between the tokenizer's name and its number)
    shown = invoke(db, "show", "1", env={"COLUMNS": "200"}).stdout
    assert "Production vocabularies" in shown and "gpt2 0." in shown
    report = (root / "reports" / "run-1.html").read_text()
    assert "Words split by each tokenizer" in report and "Vocabulary overlap" in report
