"""Unigram and WordPiece models trained by the analyzer's engines, both counted by Hugging Face
tokenizers: byte-level and lossless on any text, sized exactly as the README defines a size,
counted by the library from the model (also when the stored file is loaded whole, its
pre-tokenizer included), and WordPiece's training the same in every process and the one Hugging
Face's WordPieceTrainer makes, to the stored file's last byte."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.bpe.pretokenize import resolve
from analyzer.external.library_trained import (
    BYTE_CHARS,
    CONTINUING,
    huggingface_wordpiece,
    min_size,
    model_from_document,
    to_byte_chars,
    train_model,
    whole_tokenizer,
)
from analyzer.store import Algorithm
from helpers import SAMPLE_CORPUS, TINY

pytest.importorskip("tokenizers", reason="Unigram and WordPiece need pip install -e '.[tokenizers]'")


def sample_texts() -> list[str]:
    return [line for path in sorted(SAMPLE_CORPUS.glob("*.txt"))
            for line in path.read_text(encoding="utf-8").splitlines() if line]


def chunk_counts(texts: list[str], pretokenizer: str) -> dict[str, int]:
    splitter = resolve(pretokenizer)
    return dict(Counter(chunk for text in texts
                        for chunk in (splitter.split(text) if splitter else [text])))


@pytest.fixture(scope="module")
def models() -> dict[Algorithm, object]:
    texts = sample_texts()
    return {algorithm: train_model(algorithm, chunk_counts(texts, "words"), 1500, "words")
            for algorithm in (Algorithm.UNIGRAM, Algorithm.WORDPIECE)}


@pytest.mark.parametrize("algorithm", [Algorithm.UNIGRAM, Algorithm.WORDPIECE])
def test_a_size_is_every_entry_with_the_byte_symbols_and_no_special_token(models, algorithm):
    model = models[algorithm]
    assert model.size == 1500  # the sample corpus has pieces enough for this size
    pieces = set(model.pieces_of)
    assert set(BYTE_CHARS.values()) <= pieces
    if algorithm == Algorithm.WORDPIECE:
        assert {CONTINUING + char for char in BYTE_CHARS.values()} <= pieces
        assert model.pieces_of[:256] == list(BYTE_CHARS.values())  # a byte's id is the byte
    document = json.loads(model.document)
    assert document["added_tokens"] == [] and document["normalizer"] is None


def test_a_size_below_the_byte_symbols_is_refused():
    assert (min_size(Algorithm.UNIGRAM), min_size(Algorithm.WORDPIECE)) == (256, 512)
    with pytest.raises(ValueError, match="wordpiece needs a size of 512 or more"):
        train_model(Algorithm.WORDPIECE, {"a": 1}, 511, "words")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(exclude_categories=["Cs"]), max_size=60))
@pytest.mark.parametrize("algorithm", [Algorithm.UNIGRAM, Algorithm.WORDPIECE])
def test_any_text_round_trips_through_the_pieces(models, algorithm, text):
    """Scripts the training never saw (emoji, control characters) included: every byte is a
    piece, so no text is ever unknown."""
    model = models[algorithm]
    pieces = model.pieces(text)
    assert b"".join(piece for _, piece in pieces) == text.encode("utf-8")
    assert [token for token, _ in pieces] == model.encode(text)


def test_wordpiece_keeps_chunk_initial_bytes_that_look_like_its_mark(models):
    model = models[Algorithm.WORDPIECE]
    for text in ["## heading", "a ##b", "###"]:
        assert model.decode(model.encode_chunks(model.chunks(text))) == text.encode()
        assert b"".join(piece for _, piece in model.pieces(text)) == text.encode()


# WordPiece always with a pre-tokenizer: a run refuses it without one.
@pytest.mark.slow
@pytest.mark.parametrize("algorithm, pretokenizer", [
    *((Algorithm.UNIGRAM, p) for p in ("none", "words", "cl100k", "o200k")),
    *((Algorithm.WORDPIECE, p) for p in ("words", "cl100k", "o200k"))])
def test_the_stored_file_loaded_whole_counts_as_the_model_does(algorithm, pretokenizer):
    """What `export --tokenizer` hands a user: the library loads the file alone (its Split and
    byte-level steps) and gives the same ids as the run's chunk-by-chunk counting; and the
    model reloaded from its bytes is the same model."""
    texts = sample_texts()
    model = train_model(algorithm, chunk_counts(texts, pretokenizer), 700, pretokenizer)
    whole = whole_tokenizer(model.document)
    reloaded = model_from_document(algorithm, model.document, pretokenizer)
    assert reloaded.document == model.document
    for text in texts + [text for units in TINY.values() for text in units]:
        ids = model.encode(text)
        assert whole.encode(text, add_special_tokens=False).ids == ids
        assert reloaded.encode(text) == ids
        assert whole.decode(ids) == text


def test_wordpiece_training_is_the_same_every_time():
    counts = chunk_counts(sample_texts(), "words")
    documents = {train_model(Algorithm.WORDPIECE, counts, 900, "words").document
                 for _ in range(3)}
    assert len(documents) == 1


def test_wordpiece_is_what_hugging_faces_trainer_makes(models):
    model = models[Algorithm.WORDPIECE]
    assert model.pieces_of == huggingface_wordpiece(chunk_counts(sample_texts(), "words"), 1500)
    # The stored tokenizer.json, byte for byte the one train_model wrote when Hugging Face's
    # WordPieceTrainer trained it (tokenizers 0.23.3): runs made before read the same.
    assert model.sha256 == "158c0e7dd7b6e4d8143c2bebe2133c6f53f48115e591de6518ae601889e04db9"


def test_a_chunk_is_written_in_byte_symbols_as_the_library_writes_it():
    tokenizers = pytest.importorskip("tokenizers")
    byte_level = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    for text in ["héllo wörld", "नमस्ते", "\t\n", "😀"]:
        assert to_byte_chars(text) == "".join(piece for piece, _ in
                                              byte_level.pre_tokenize_str(text))


# The analyzer's own counts (`count_chunks`: Unigram's compiled Viterbi, WordPiece's encoder)
# against the library's own encoding of the same model, id for id (issue 69: counting a run's
# measured units through the library took longer than training them).

def library_ids(model, chunks: list[str]) -> tuple[list[int], list[int]]:
    """The library's own encoding of each chunk (its model alone, the chunk in byte symbols)."""
    encoded = [encoding.ids for encoding in model.tokenizer.encode_batch(
        [to_byte_chars(chunk) for chunk in chunks], add_special_tokens=False)]
    return [token for ids in encoded for token in ids], [len(ids) for ids in encoded]


def counted(model, chunks: list[str]) -> tuple[list[int], list[int]]:
    ids, lengths = model.count_chunks(chunks)
    return ids.tolist(), lengths.tolist()


@pytest.fixture(scope="module")
def compiled():
    from analyzer.bpe.choice import compiled_module

    if compiled_module("analyzer.unigram") is None or compiled_module("analyzer.wordpiece") is None:
        pytest.skip("the compiled engines are not built here")


SMALL = st.text(st.sampled_from("ab#é ") , min_size=1, max_size=12)
"""Chunks of a small alphabet: a multi-byte letter, the WordPiece mark's byte, a space."""


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(training=st.dictionaries(SMALL, st.integers(1, 9), min_size=1, max_size=12),
       chunks=st.lists(st.one_of(SMALL, st.text(max_size=8).filter(bool)), min_size=1, max_size=15),
       extra=st.integers(0, 40))
@pytest.mark.parametrize("algorithm", [Algorithm.UNIGRAM, Algorithm.WORDPIECE])
def test_the_compiled_count_is_the_library_s_on_small_alphabets(compiled, algorithm, training,
                                                                chunks, extra):
    """Models trained on chunks of a few letters (the sizes past what the text has stop where
    it stops), then chunks of those letters and of any character, lone surrogates escaped as
    the run does."""
    model = train_model(algorithm, training, min_size(algorithm) + extra, "none")
    assert counted(model, chunks) == library_ids(model, chunks)


@pytest.mark.parametrize("algorithm", [Algorithm.UNIGRAM, Algorithm.WORDPIECE])
def test_the_compiled_count_is_the_library_s_on_real_text(compiled, models, algorithm):
    """The sample corpus's twelve languages and the tests' own, every chunk, at 1,500."""
    texts = sample_texts() + [text for units in TINY.values() for text in units]
    chunks = list(chunk_counts(texts, "words")) + ["## heading", "###", "\udcff\udc80x"]
    assert counted(models[algorithm], chunks) == library_ids(models[algorithm], chunks)


@settings(max_examples=60, deadline=None)
@given(scores=st.lists(st.sampled_from([-1.0, -2.0, -3.0, -1.5]), min_size=6, max_size=6),
       chunks=st.lists(st.text(st.sampled_from("abc"), min_size=1, max_size=10), min_size=1,
                       max_size=8))
def test_the_compiled_unigram_breaks_ties_as_the_library_does(compiled, scores, chunks):
    """Pieces whose sums tie (scores of a few values): the library keeps the first path that
    reaches a place, the shorter piece first, and takes another only when it scores more."""
    import tokenizers

    pieces = [*BYTE_CHARS.values(), "ab", "bc", "abc", "ca", "aa", "bb"]
    vocab = [(piece, -5.0) for piece in pieces[:256]] + list(zip(pieces[256:], scores))
    document = json.loads(tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, None, False)).to_str())
    model = model_from_document(Algorithm.UNIGRAM, document, "none")
    assert counted(model, chunks) == library_ids(model, chunks)


def test_the_compiled_unigram_sums_the_scores_the_library_read(compiled):
    """The library's JSON reader rounds some scores a bit otherwise than Python's: here two
    paths to the end of 'ébé   ' tie with Python's scores (Ġ then ĠĠ, the first found, wins),
    and one is ahead with the library's (ĠĠ then Ġ). The compiled count sums the library's."""
    training = {" b#aaééaé": 7, "ba b# ": 5, "béab#éaa   b": 1, "é#abéé#aaa": 6}
    model = train_model(Algorithm.UNIGRAM, training, 272, "none")
    chunks = ["ébé   ", "ébé   a##b#", "   "]
    assert counted(model, chunks) == library_ids(model, chunks)
    assert [model.pieces_of[token] for token in model.encode_chunks(["ébé   "])[0]][-2:] == \
        ["ĠĠ", "Ġ"]


def test_a_model_the_compiled_count_cannot_take_is_counted_by_the_library(compiled):
    """A Unigram model without every byte (a stored one of another trainer) would have the
    library add an unknown node where none begins: that model is counted by the library."""
    import tokenizers

    vocab = [("a", -1.0), ("b", -1.0), ("ab", -1.5), ("<unk>", -10.0)]
    document = json.loads(tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, 3, False)).to_str())
    model = model_from_document(Algorithm.UNIGRAM, document, "none")
    assert counted(model, ["abba", "ca"]) == library_ids(model, ["abba", "ca"])
