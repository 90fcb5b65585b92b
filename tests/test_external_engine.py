"""Production tokenizers counted by the analyzer's engine (analyzer/external/engine_models.py,
engine_count.py) count exactly as their libraries do, token for token: on every unit of the
real corpora, on the project's own sample, and on generated text of every script the catalog
serves, with digits, long runs of one character, whitespace of every kind, combining marks,
private-use and unassigned code points, the libraries' added tokens, and lone surrogates where
a library takes them. Where the engine cannot equal a library, the library counts, and says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.bpe import native_split
from analyzer.bpe.words import split_words
from analyzer.external import catalog
from helpers import resolve_or_skip, shared_corpus

ENGINE = sorted(name for name, item in catalog().items() if item.on_engine)
"""Every catalog tokenizer the engine counts (all but SentencePiece models)."""
SAMPLE = Path(__file__).resolve().parents[1] / "parallel_corpora" / "harbour_town"

compiled = pytest.mark.skipif(not native_split.available(),
                              reason="the compiled engine is not built here")


@pytest.fixture(scope="module")
def tokenizers(_packed_store):
    """name -> the resolved tokenizer (or None: not on this machine), loaded once a module."""
    found: dict = {}

    def get(name):
        if name not in found:
            with pytest.MonkeyPatch.context() as patch:
                if _packed_store is not None:
                    patch.setenv("ANALYZER_TOKENIZER_STORE", str(_packed_store))
                patch.setenv("ANALYZER_OFFLINE", "1")
                patch.setenv("HF_HUB_OFFLINE", "1")
                try:
                    found[name] = resolve_or_skip(name)
                    LIBRARY_IDS[name] = _library_ids(found[name])
                except pytest.skip.Exception:
                    found[name] = None
        if found[name] is None:
            pytest.skip(f"{name} is not on this machine (.ci/run provides it)")
        return found[name]

    return get


def library_counts(tokenizer, texts: list[str]) -> list[int]:
    return tokenizer.count(texts)


def assert_counts_as_its_library(tokenizer, texts: list[str], ids_every: int = 1) -> None:
    """The engine's counts equal the library's on every text, and its tokens on every
    `ids_every`-th (the library's ids from its own encoder)."""
    assert tokenizer.counter is not None, tokenizer.why_library()
    counts, _ = tokenizer.measure(texts, words=False)
    expected = library_counts(tokenizer, texts)
    wrong = [(text, found, wanted) for text, found, wanted in zip(texts, counts, expected)
             if found != wanted]
    assert not wrong, f"{len(wrong)} of {len(texts)} differ, e.g. {wrong[:3]}"
    encoder_ids = LIBRARY_IDS[tokenizer.name]
    for text in texts[::ids_every]:
        found_ids = tokenizer.counter.encode(text)
        if found_ids is not None:  # else the library counted it
            assert found_ids == encoder_ids(text), text


LIBRARY_IDS: dict = {}
"""name -> the library's own encoder of each text's ids."""


def _library_ids(tokenizer):
    from analyzer.external import formats
    from analyzer.external.tokenizers import catalog_files

    item = tokenizer.entry
    encoder = formats.build(item, {n: f.data for n, f in catalog_files(item, downloads=False).items()},
                            item.name)
    return encoder.ids


@compiled
@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINE)
def test_the_sample_corpus_counts_token_for_token(tokenizers, name):
    texts = [line for path in sorted(SAMPLE.glob("*.txt"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    assert_counts_as_its_library(tokenizers(name), texts)


@compiled
@pytest.mark.slow
@pytest.mark.corpora
@pytest.mark.parametrize("name", ENGINE)
def test_every_unit_of_ntrex_counts_as_its_library(tokenizers, name):
    folder = shared_corpus("ntrex128")
    texts = [line for path in sorted(folder.glob("*.txt"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    assert_counts_as_its_library(tokenizers(name), texts, ids_every=53)


@compiled
@pytest.mark.slow
@pytest.mark.corpora
def test_every_unit_of_udhr_counts_as_every_library(tokenizers):
    folder = shared_corpus("udhr")
    texts = [line for path in sorted(folder.glob("*.txt"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    for name in ENGINE:
        try:
            tokenizer = tokenizers(name)
        except pytest.skip.Exception:
            continue
        assert_counts_as_its_library(tokenizer, texts, ids_every=7)


# Generated text: every script the catalog serves, and what pre-tokenizers treat specially.
SCRIPTS = ("Hello world Ünïcödé ñandú straße İstanbul ǅemal "  # Latin, title case
           "Привет мир Ελληνικά Հայերեն ქართული עברית العربية فارسی "
           "हिन्दी বাংলা ਪੰਜਾਬੀ ગુજરાતી ଓଡ଼ିଆ தமிழ் తెలుగు ಕನ್ನಡ മലയാളം සිංහල "
           "ภาษาไทย ລາວ བོད་ཡིག မြန်မာ ខ្មែរ 한국어 日本語 ひらがな カタカナ 中文 繁體 "
           "አማርኛ ᏣᎳᎩ ⵜⴰⵎⴰⵣⵉⵖⵜ ߒߞߏ ᱥᱟᱱᱛᱟᱲᱤ ꦗꦮ ᬩᬮᬶ ᓀᐦᐃᔭᐍᐏᐣ ᠮᠣᠩᠭᠣᠯ")
SPECIAL = [" ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "\x0b", "\x0c", "\x85", "\xa0",
           "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
           "\x1c", "\x1f", "123", "4567890", "٣٤٥", "१२३", "１２３", "Ⅻ", "½", "²",
           "'s", "'S", "'ll", "'LL", "'Re", "'ve", "'d", "'M", "'t", "'\u017f", "don't",
           "e\u0301", "\u0301", "क्षि", "a\u0300\u0301\u0302", "\u20dd", "\u200d", "\ufe0f",
           "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f44d\U0001f3fd", "🙂",
           "\ue000", "\U000f0000", "\u0378", "\u05ff", "\U000107bb", "\U00011de0", "\U00016ff4",
           "\u0295", "\u2581", "\u2581\u2581", "<", "<|", "|>", "<|endoftext|>", "<tool_call>",
           "<unused0>", "[multimodal]", "<mask>", "<｜fim▁hole｜>", "!!", "...", "?!", "//",
           "\u2014", "«»", "©", "$", "\x00", "https://example.org/a?b=c", "ﬁ", "Å", "Å",
           "ㄱ", "가", "힣", "\uac00\u11a8", "ǈ", "ʰ", "ª", "々", "〆"]
pieces = (st.sampled_from(SPECIAL) | st.text(alphabet=SCRIPTS, min_size=1, max_size=12)
          | st.builds(lambda char, n: char * n, st.sampled_from("a 1.\n\u3000ภ中\u2581'"),
                      st.integers(2, 400)))
generated = st.lists(pieces, max_size=20).map("".join) | st.text(max_size=40)


@compiled
@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINE)
def test_generated_text_counts_token_for_token(tokenizers, name):
    tokenizer = tokenizers(name)

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(texts=st.lists(generated, min_size=1, max_size=8))
    def check(texts):
        assert_counts_as_its_library(tokenizer, texts)

    check()


SURROGATES = ["a\ud800b", "\udfff", "x\ud83d\ude00y", "\ud83d", "ok \udc00 ok"]


@compiled
@pytest.mark.slow
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "llama3", "claude-legacy"])
def test_lone_surrogates_count_as_tiktoken_takes_them(tokenizers, name):
    """tiktoken takes a lone surrogate as U+FFFD (and a pair as its character); the engine
    does the same."""
    assert_counts_as_its_library(tokenizers(name), SURROGATES)


@compiled
@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINE)
def test_split_words_come_from_the_same_pass_as_the_library_s_pieces(tokenizers, name):
    """The engine's split words equal those of the library's own pieces, of the text as the
    tokenizer sees it (its normaliser's)."""
    tokenizer = tokenizers(name)
    texts = [line for path in sorted(SAMPLE.glob("*.txt"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    texts += ["Ünïcödé café naïve", "x¨y", "ﬁne words", "a\u2581b c", "don't stop"]
    _, found = tokenizer.measure(texts)
    spelled = tokenizer.words_text or (lambda text: text)
    expected = [split_words(spelled(text), [piece for _, piece in tokenizer.pieces(text)])
                for text in texts]
    assert found == expected


@compiled
@pytest.mark.slow
def test_a_tokenizer_the_splitter_does_not_know_keeps_its_library(tmp_path, catalog_store):
    """A tokenizer.json whose split pattern the compiled splitter does not write out is
    counted by Hugging Face's library, and says why."""
    from analyzer.external import resolve_tokenizer

    resolve_or_skip("qwen3")
    document = _catalog_document("qwen3")
    document["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"[a-z]+|[^a-z]+"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    tokenizer = resolve_tokenizer(str(path))
    assert tokenizer.counted_by == "tokenizers"
    assert "split pattern" in (tokenizer.why_library() or "")
    counts, _ = tokenizer.measure(["hello world", "ok"])
    assert counts == tokenizer.count(["hello world", "ok"])


@compiled
@pytest.mark.slow
@pytest.mark.parametrize("normalizer, content, texts", [
    ("Lowercase", "Abc", ["Abc abc", "xAbcx abc ABC"]),
    ("NFKC", "\ufb01x", ["the fix is in", "prefix", "\uff46\uff4f\uff4f\uff42\uff41\uff52 \ufb01x"]),
])
def test_a_normalised_added_token_is_found_as_its_normalised_content(
        tmp_path, catalog_store, normalizer, content, texts):
    """Hugging Face finds an added token marked normalized by its content normalised, in the
    normalised text; the engine looked for the content as written ("Abc abc" under Lowercase:
    2 tokens where the library counts 3; found attacking issue 69, a user's tokenizer.json)."""
    from analyzer.external import resolve_tokenizer

    resolve_or_skip("qwen3")
    document = _catalog_document("qwen3")
    document["normalizer"] = {"type": normalizer}
    token_id = max(token["id"] for token in document["added_tokens"]) + 1
    document["added_tokens"].append({"id": token_id, "content": content, "normalized": True,
                                     "special": False, "lstrip": False, "rstrip": False,
                                     "single_word": False})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    tokenizer = resolve_tokenizer(str(path))
    assert tokenizer.counted_by == "analyzer"
    assert tokenizer.measure(texts)[0] == tokenizer.count(texts)


def _catalog_document(name: str) -> dict:
    from analyzer.external.catalog import entry
    from analyzer.external.tokenizers import catalog_files

    return json.loads(catalog_files(entry(name), downloads=False)["tokenizer.json"].data)


def test_without_the_compiled_engine_the_library_counts(monkeypatch):
    """ANALYZER_ENGINE=python (or no compiler at install): every tokenizer keeps its library,
    with the same counts."""
    from analyzer.bpe import choice
    from analyzer.external import resolve_tokenizer

    monkeypatch.setenv("ANALYZER_ENGINE", "python")
    for cached in (choice.wanted, choice.extension):
        cached.cache_clear()
    try:
        tokenizer = resolve_tokenizer("cl100k_base")
        assert tokenizer.counted_by == "tiktoken"
        assert "compiled engine" in (tokenizer.why_library() or "")
        assert tokenizer.measure(["hello world"])[0] == [2]
    finally:
        monkeypatch.delenv("ANALYZER_ENGINE")
        for cached in (choice.wanted, choice.extension):
            cached.cache_clear()


@compiled
@pytest.mark.slow
def test_a_tokenizer_s_engine_model_is_made_once_per_process():
    """What counts a tokenizer is kept with its encoder, once per process
    (`analyzer.external.loaded`): resolved again (the service's next run, a settings check),
    it counts on the engine model compiled the first time, with nothing made again."""
    from analyzer.external import loaded, resolve_tokenizer

    first = resolve_tokenizer("cl100k_base")
    assert first.measure(["hello world"])[0] == [2] and first.counted_by == "analyzer"
    before = loaded.builds()
    again = resolve_tokenizer("cl100k_base")
    assert again.measure(["hello world, again"])[0] == [4]
    assert again.counter is first.counter and again.counter.compiled is first.counter.compiled
    assert loaded.builds() == before


@compiled
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(catalog()))
def test_the_catalog_says_truly_which_engine_counts_each(tokenizers, name):
    """`analyzer tokenizers` says which engine counts each entry without loading it (the
    catalog's `engine`, by default its format's); that is what loading it finds."""
    from analyzer.external import availability

    tokenizer = tokenizers(name)
    item = catalog()[name]
    assert tokenizer.counted_by == ("analyzer" if item.on_engine else item.library), \
        tokenizer.why_library()
    assert availability(item).counted_by == tokenizer.counted_by
