"""The compiled pre-tokenizers (analyzer/bpe/engine/split.c) give exactly `regex`'s chunks: on
random text of every script (hypothesis), on the structures the patterns treat specially
(contractions in every case, combining marks, emoji with ZWJ, CR/LF runs, spaces before
words), and on every language of the real corpora; their Unicode tables are the `regex`
module's; the distinct chunks they gather equal the Python path's."""

from __future__ import annotations

import random
import sys
import unicodedata
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.bpe import native_split
from analyzer.bpe.pretokenize import Pretokenizer, chunk_texts, resolve
from helpers import shared_corpus

NATIVE = list(native_split.PATTERN_NUMBERS)
PROJECT_CORPUS = Path(__file__).resolve().parents[1] / "parallel_corpora"


@pytest.fixture(autouse=True)
def _compiled_splitter():
    if not native_split.available():
        pytest.skip("the compiled engine is not built here (no C compiler at install)")


def regex_chunks(name: str, text: str) -> list[str]:
    """The definition: the pattern run by the `regex` module."""
    pretokenizer = resolve(name)
    assert isinstance(pretokenizer, Pretokenizer)
    return pretokenizer.split_with_regex(text)


# Characters the patterns tell apart: each class of split.c (spaces of every kind, letters of
# each case class, marks, numbers of other scripts, "other"), CR and LF, the apostrophe and the
# contraction letters in both cases with their (?i) variant U+017F, slashes.
ALPHABET = (" \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000"
            "aAsSdDmMtTlLvVrReE\u017f'\"/.,!?-xyzXYZ"
            "\u01c5\u01c8\u02b0\u02b1\u00aa\u00ba\u05d0\u0627"  # Lt, Lm, Lo
            "\u0300\u0301\u0903\u20dd"                          # Mn, Mc, Me
            "0123\u0663\u0967\u2167\u00bd\u00b2"                # Nd (other scripts), Nl, No
            "кКΩωçÇßẞ中文日本語ภาษาไทยမြန်한국हिन्दी"
            "\U0001f600\u200d\U0001f469\ufe0f\U0001f3fb\u00a9\u2014\u2019\x00\x1f\U000e0041")
structured = st.text(alphabet=ALPHABET, max_size=60)
pieces = st.sampled_from([" ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\n\n", " \n ", "123",
                          "45678", "'s", "'S", "'ll", "'LL", "'Re", "'ve", "'d", "'m", "'t",
                          "'\u017f", "don't", "DON'T", "!!", "...", "?!", "//", "\u2014",
                          "Hello", "hELLO", "McDonald", "\u01c5a", "a\u0301", "\u0301",
                          "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u00a0", "\u3000",
                          "e\u0301\u0302", "क्षि", "ภาษา", "\u05d0\u05d1", "x/y", "\u2028"])
joined = st.lists(pieces, max_size=16).map("".join)
any_text = st.text(max_size=80)  # every code point hypothesis draws, surrogates aside
surrogates = st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
                     | st.sampled_from("a 1.\n"), max_size=20)

split_settings = settings(max_examples=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])


@split_settings
@given(text=structured | joined | any_text | surrogates, name=st.sampled_from(NATIVE))
def test_each_pattern_cuts_exactly_where_regex_does(text, name):
    assert native_split.split(text, name) == regex_chunks(name, text)


@pytest.mark.parametrize("name", NATIVE)
@pytest.mark.parametrize("text", [
    "", " ", "\n", "\r\n\r\n", "  \n  x", "x  ", "x \n", "a\r\n\r\n b", "   \t\t\n\n\t  word",
    "I'm don't they'LL we'VE 'Re 'd '\u017f", "O'Neil's", "'", "''s", "x'", "x'l",
    "ABCdef ABC abc Abc aBC \u01c5a \u02b0\u02b0", "\u0301\u0301a", " \u0301", "\u0301",
    "1234567 1,234.56 \u0663\u0664\u0665\u0666", "a...b //x !!\n\n", " !!/\n", "   !!",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f44d\U0001f3fd", "\u00a0word \u3000\u3000x",
    "New York, 2024...  end  ", "tab\tseparated\tvalues\r\n", "\u2028\u2029x",
])
def test_the_cases_the_patterns_treat_specially(name, text):
    assert native_split.split(text, name) == regex_chunks(name, text)


def test_the_unicode_tables_are_the_regex_modules():
    """Each class bit of every code point sampled (every 7th, and each one next to a class
    boundary) against `regex.fullmatch` on that one character; and the (?i) variants of the
    contraction letters. `regex` has its own Unicode tables, newer than Python's
    `unicodedata` can be: the version is printed with -s."""
    tables = native_split.unicode_tables()
    compiled = {bit: regex.compile(pattern) for bit, pattern in native_split.CLASSES.items()}
    classes = tables.classes
    boundaries = {cp for cp in range(1, native_split.CODE_POINTS) if classes[cp] != classes[cp - 1]}
    sample = set(range(0, native_split.CODE_POINTS, 7)) | boundaries | {cp - 1 for cp in boundaries}
    wrong = [(hex(cp), bit) for cp in sorted(sample) for bit, pattern in compiled.items()
             if bool(classes[cp] & bit) != bool(pattern.fullmatch(chr(cp)))]
    assert not wrong, wrong[:20]
    assert len(boundaries) > 3000  # the sample crosses every range of every class
    folds = native_split.fold_pairs(tables)
    for letter in native_split.CONTRACTION_LETTERS:
        variants = {chr(cp) for cp, to in folds if to == ord(letter)}
        assert variants == {letter, letter.upper()} | ({"\u017f"} if letter == "s" else set())
    print(f"regex {regex.__version__}; Python's unicodedata {unicodedata.unidata_version}",
          file=sys.stderr)


def test_the_tables_hold_a_letter_new_in_recent_unicode():
    """The tables come from `regex`, not from Python's older `unicodedata`: a letter that
    `regex` knows and `unicodedata` does not is a letter here too."""
    tables = native_split.unicode_tables()
    newer = [cp for cp in range(0x10000, 0x30000)
             if regex.fullmatch(r"\p{L}", chr(cp)) and unicodedata.category(chr(cp)) == "Cn"]
    if not newer:
        pytest.skip(f"regex {regex.__version__} knows no letter Python's unicodedata "
                    f"{unicodedata.unidata_version} lacks")
    assert all(tables.classes[cp] & 2 for cp in newer)
    text = "a" + chr(newer[0]) * 3 + " b"
    for name in NATIVE:
        assert native_split.split(text, name) == regex_chunks(name, text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(structured | joined | any_text, max_size=6), name=st.sampled_from(NATIVE),
       data=st.data())
def test_gathered_chunks_equal_the_python_path(texts, name, data):
    """Distinct chunks in order of first appearance, their counts with weights, and each
    text's chunk ids: the same as gathering `regex`'s chunks in Python."""
    weights = data.draw(st.lists(st.integers(1, 5), min_size=len(texts), max_size=len(texts)))
    native = chunk_texts(texts, resolve(name), weights)
    python = chunk_texts(texts, _RegexOnly(resolve(name)), weights)
    assert (native.chunks, native.counts, native.of_text) == (python.chunks, python.counts,
                                                             python.of_text)


class _RegexOnly:
    """A pre-tokenizer's `regex` path, as a Splitter (so chunk_texts gathers in Python)."""

    def __init__(self, pretokenizer):
        self.pretokenizer = pretokenizer

    def split(self, text: str, index: int = 0) -> list[str]:
        return self.pretokenizer.split_with_regex(text, index)


def _corpus_files():
    files = sorted(PROJECT_CORPUS.glob("*/*.txt"))
    for name in ("udhr", "ntrex128"):
        folder = shared_corpus(name)  # skips, saying why, without ../shared
        files += sorted(folder.glob("*.txt"))
    return files


@pytest.mark.slow
@pytest.mark.parametrize("name", NATIVE)
def test_every_real_corpus_is_cut_as_regex_cuts_it(name):
    """Every line of every language of the project's sample corpus, the UDHR and NTREX-128."""
    files = _corpus_files()
    lines = [line for path in files for line in path.read_text(encoding="utf-8").splitlines()]
    native = chunk_texts(lines, resolve(name))
    python = chunk_texts(lines, _RegexOnly(resolve(name)))
    assert native.chunks == python.chunks and native.counts == python.counts
    assert native.ids == python.ids and native.offsets == python.offsets


def test_random_code_points_of_every_plane():
    """Long texts of code points drawn from all of Unicode (seeded), surrogates included."""
    rng = random.Random(26)
    for _ in range(40):
        text = "".join(chr(rng.choice([rng.randrange(0x110000), rng.randrange(0x80),
                                       rng.randrange(0x3000)])) for _ in range(2000))
        for name in NATIVE:
            assert native_split.split(text, name) == regex_chunks(name, text)


def test_the_python_engine_setting_leaves_splitting_to_regex(monkeypatch):
    from analyzer.bpe import choice

    def forget():
        choice.wanted.cache_clear()
        choice.extension.cache_clear()

    forget()
    monkeypatch.setenv("ANALYZER_ENGINE", "python")
    try:
        assert not native_split.available()
        assert not resolve("cl100k").native
        assert resolve("cl100k").split("I'm here") == ["I", "'m", " here"]
    finally:
        monkeypatch.delenv("ANALYZER_ENGINE")
        forget()
    assert native_split.available()


def test_a_users_pattern_never_reaches_compiled_code():
    assert not resolve(r"re:\w+|\W+").native
    assert not resolve(r"split:\d+").native


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(structured | joined, max_size=12), name=st.sampled_from(NATIVE),
       threads=st.integers(2, 9))
def test_any_number_of_threads_gathers_the_same(texts, name, threads):
    """The texts are cut into runs, one per thread, and the threads' tables merged in order:
    the chunks, their order, counts and ids are those of one thread."""
    one = native_split.chunk_texts(texts, name, threads=1)
    many = native_split.chunk_texts(texts, name, threads=threads)
    assert (many.chunks, many.counts, many.ids, many.offsets) == (one.chunks, one.counts, one.ids,
                                                                 one.offsets)


def test_counting_on_two_threads_counts_the_same(monkeypatch):
    """Counting shares the distinct chunks out to threads (here on a small corpus, the bound
    below which one thread works lowered to nothing) and joins their counts in order."""
    from analyzer import bpe
    from analyzer.bpe import threads

    lines = [line for path in sorted(PROJECT_CORPUS.glob("*/*.txt"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    merges = bpe.train(lines, 600, pretokenizer="cl100k")
    vocabulary = bpe.Vocabulary(merges, "cl100k")
    monkeypatch.setenv(threads.THREADS_ENV, "1")
    one = vocabulary.measure(lines, [256, 400, 600], roundtrip=True)
    monkeypatch.setenv(threads.THREADS_ENV, "2")
    monkeypatch.setattr(threads, "PARALLEL_CHARACTERS", 0)
    assert threads.default_threads(lines) == 2
    two = vocabulary.measure(lines, [256, 400, 600], roundtrip=True)
    assert two.counts == one.counts and two.roundtrip_ok is one.roundtrip_ok is True
    assert two.chunks == one.chunks


def test_a_character_the_compiled_split_would_lose_is_left_to_regex(monkeypatch):
    """No built-in pattern loses a character, but were compiled code to say one did (a bug),
    `regex`, the definition, decides: its chunks are used, or its PretokenizerError raised."""
    from analyzer.bpe import pretokenize
    from analyzer.bpe.pretokenize import PretokenizerError, distinct_chunks

    texts = ["I'm here", "and there"]
    expected = chunk_texts(texts, _RegexOnly(resolve("cl100k")))
    monkeypatch.setattr(native_split, "split", lambda text, name: None)
    monkeypatch.setattr(native_split, "chunk_texts", lambda texts, name, weights=None, keep_ids=True:
                        native_split.NativeChunks([], native_split.array("q"), None, None, 1))
    gathered = chunk_texts(texts, resolve("cl100k"))
    assert (gathered.chunks, gathered.counts, gathered.of_text) == (expected.chunks, expected.counts,
                                                                   expected.of_text)
    assert distinct_chunks(texts, resolve("cl100k")) == (expected.chunks, expected.counts)
    assert resolve("cl100k").split("I'm here") == ["I", "'m", " here"]
    lossy = pretokenize.Pretokenizer("cl100k", pretokenize.PRETOKENIZERS["cl100k"],
                                     regex.compile(r"\w+"))  # a pattern that loses the spaces
    assert lossy.native  # the same name and pattern: compiled code would split it
    with pytest.raises(PretokenizerError, match="text 1, character 3"):
        chunk_texts(texts, lossy)
