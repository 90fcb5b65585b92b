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
