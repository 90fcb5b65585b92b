"""WordPiece's encoder: both engines give `reference.encode`'s ids (Hugging Face's greedy longest
match first) on any vocabulary and chunk, long ones and long runs of one byte included, and
Hugging Face's own on trained vocabularies; its work is linear in a chunk's length, where the
library's search is cubic; a run's WordPiece counting goes through it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.wordpiece import encoder, reference
from analyzer.wordpiece.encoder import Encoder
from analyzer.wordpiece.trainer import compiled_engine

ENGINES = ["python", pytest.param("compiled", marks=pytest.mark.skipif(
    compiled_engine() is None, reason="the compiled WordPiece engine is not built here"))]
BYTES = reference.initial_vocabulary()

# Vocabularies over "a", "b", "#" (so `##` strings meet chunks that begin with `#`), with all
# byte symbols or some of them (a place no piece begins: no encoding), and chunks of those
# bytes, short or long, or long runs of one byte between others.
piece = st.binary(min_size=1, max_size=8).map(lambda b: bytes(b"ab#"[x % 3] for x in b))
vocabularies = st.tuples(
    st.one_of(st.just(BYTES), st.lists(st.sampled_from(BYTES), unique=True).map(sorted)),
    st.lists(st.tuples(st.booleans(), piece), max_size=40),
).map(lambda v: v[0] + sorted({(b"##" if inside else b"") + p for inside, p in v[1]} - set(v[0])))
chunks = st.one_of(
    st.binary(min_size=1, max_size=60).map(lambda b: bytes(b"ab#"[x % 3] for x in b)),
    st.tuples(st.sampled_from([b"", b"b", b"#", b"ab"]), st.sampled_from(b"ab#"),
              st.integers(1, 300), st.sampled_from([b"", b"b", b"#a"])).map(
        lambda c: c[0] + bytes([c[1]]) * c[2] + c[3]))


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=150, deadline=None)
@given(vocab=vocabularies, chunk_list=st.lists(chunks, min_size=1, max_size=6))
def test_the_encoder_gives_the_references_ids(engine, vocab, chunk_list):
    expected = [reference.encode(vocab, chunk) for chunk in chunk_list]
    assert encoder(vocab, engine).encode(chunk_list) == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_runs_of_one_byte_are_cut_as_the_reference_cuts_them(engine):
    """Pieces of every power of two (what training on a long run learns), one that begins
    with a long run and ends otherwise (the search goes deep and comes back), and `#`s."""
    vocab = BYTES + [b"a" * 2**k for k in range(1, 9)] + [b"##" + b"a" * 2**k for k in range(1, 9)]
    vocab += [b"a" * 200 + b"b", b"##" + b"a" * 150 + b"#", b"##", b"###a"]
    cut = encoder(vocab, engine)
    for chunk in [b"a" * 1000, b"a" * 1001 + b"b", b"b" + b"a" * 777, b"#" * 500, b"##" + b"a" * 300,
                  b"a" * 200 + b"b" + b"a" * 151 + b"#"]:
        assert cut.encode([chunk]) == [reference.encode(vocab, chunk)]


@pytest.mark.parametrize("engine", ENGINES)
def test_str_chunks_are_their_utf8_with_surrogate_escapes(engine):
    vocab = BYTES + ["é".encode(), b"##\xff"]
    assert encoder(vocab, engine).encode(["é", "aé", "a\udcff", b"a\xff"]) == [
        [len(BYTES)], [97, 256 + 0xC3, 256 + 0xA9], [97, len(BYTES) + 1], [97, len(BYTES) + 1]]


def long_chunk(n: int) -> bytes:
    """n bytes of Chinese (3 a character, 40 of them in turn) with a long run of one in it."""
    characters = "".join(chr(0x4E00 + 37 * k) for k in range(40)).encode()
    text = (characters * (n // len(characters) + 1))[:n // 2] + "中".encode() * (n // 6)
    return text[:n - n % 3]


def work_of(engine: str, vocab: list[bytes], chunk: bytes) -> int:
    cut = encoder(vocab, engine)
    assert cut.encode([chunk]) == [Encoder(vocab).encode([chunk])[0]]
    return cut.work


@pytest.mark.parametrize("engine", ENGINES)
def test_the_work_is_linear_in_a_chunks_length(engine):
    """Steps counted (bytes read, failure links climbed, ids written), not time: 4 times the
    bytes take at most 4.5 times the steps (the library's search: 64 times), with pieces up to
    48 bytes long that the text begins but does not finish."""
    vocab = BYTES + sorted({chunk[:length] for chunk in [long_chunk(3000)]
                            for length in range(3, 48, 3)} | {b"##" + "中".encode() * 4})
    small, large = (work_of(engine, vocab, long_chunk(n)) for n in (30_000, 120_000))
    assert large <= 4.5 * small, (small, large)


def test_a_library_wordpiece_model_encodes_long_chunks_by_the_encoder(monkeypatch):
    """A run counts a WordPiece model's chunks by the encoder (the library's ids, in linear
    steps), never by the library's search (cubic: 19 s for one chunk of 10 kB); the ids are the
    library's."""
    pytest.importorskip("tokenizers", reason="WordPiece models need the tokenizers extra")
    from analyzer.external.library_trained import to_byte_chars, train_model
    from analyzer.identity import Algorithm
    text = long_chunk(30_000).decode()
    model = train_model(Algorithm.WORDPIECE, {text[:2000]: 3, text[5000:6000]: 2}, 700, "gpt2")
    short = text[:300]  # (the library takes a second on 1,000 bytes already)
    library = model.tokenizer.encode(to_byte_chars(short), add_special_tokens=False).ids

    def refused(*args, **kwargs):
        raise AssertionError("the library's WordPiece search was asked")

    monkeypatch.setattr(model, "tokenizer", type("Refusing", (), {"encode_batch": refused})())
    assert model.encode_chunks([short]) == [library]
    ids = model.encode_chunks([text[:2500], text])
    assert [reference.encode(model._spelled[0], c.encode()) for c in (text[:2500],)] == ids[:1]
    work = model._wordpiece.work
    model.encode_chunks([text + text])
    assert model._wordpiece.work - work <= 2.5 * len(text.encode())


def test_a_chunk_with_no_encoding_is_the_librarys_unknown_token():
    """A stored vocabulary without some byte symbol (none the analyzer trains): a chunk that
    needs it is the library's, its unknown token."""
    tokenizers = pytest.importorskip("tokenizers")
    from analyzer.external.library_trained import model_from_document, spell
    from analyzer.identity import Algorithm
    vocab = {spell(piece): token for token, piece in enumerate(BYTES[:256] + [b"[UNK]"])}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordPiece(
        vocab, unk_token="[UNK]", continuing_subword_prefix="##"))
    model = model_from_document(Algorithm.WORDPIECE, tokenizer.to_str().encode(), "words")
    assert model.encode_chunks(["a", "ab"]) == [[97], [256]]


@pytest.fixture(scope="module")
def trained():
    """A WordPiece model of the sample corpus (every script in it), cut by words."""
    pytest.importorskip("tokenizers", reason="WordPiece models need the tokenizers extra")
    from analyzer.external.library_trained import train_model
    from analyzer.identity import Algorithm
    from helpers import SAMPLE_CORPUS
    texts = [line for path in sorted(SAMPLE_CORPUS.glob("*.txt"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    model = train_model(Algorithm.WORDPIECE, dict.fromkeys(texts, 1), 1200, "words")
    return model, texts


def library_ids(model, chunks: list[str]) -> list[list[int]]:
    from analyzer.external.library_trained import to_byte_chars
    return [encoding.ids for encoding in model.tokenizer.encode_batch(
        [to_byte_chars(chunk) for chunk in chunks], add_special_tokens=False)]


def test_a_trained_vocabulary_encodes_as_the_library_does(trained):
    model, texts = trained
    chunks = list(dict.fromkeys(chunk for text in texts for chunk in model.chunks(text)))
    chunks += texts[:40]  # whole lines too (as a text under `none` would be one chunk)
    assert model._wordpiece.encode(chunks) == library_ids(model, chunks)


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=80))
def test_any_text_encodes_as_the_library_does(trained, text):
    model, _ = trained
    assert model._wordpiece.encode([text]) == library_ids(model, [text])
