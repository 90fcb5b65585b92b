"""Ranked BPE, the rule production tokenizers' libraries merge by (analyzer/bpe/ranked.py), and
the compiled engine that counts with it (engine/ranked.c):

- the references equal the libraries they write down: `tiktoken_encode` equals tiktoken on
  random ranks over small alphabets, `merge_all` equals Hugging Face's BPE model on random
  merges (stale candidates, pairs listed twice and all);
- `pair_table` makes tiktoken's rule Hugging Face's: both give the same tokens;
- the engine equals the references on random models of every shape (bytes or characters with
  byte fallback, merges given or derived, whole chunks first or not), texts long and short;
- its counts are the sum of its tokens, its split words `split_words` of its tokens' bytes,
  for any number of threads;
- the production tokenizers' patterns in the compiled splitter cut exactly where `regex`
  does, with the text between matches kept (Hugging Face's isolated split).
"""

from __future__ import annotations

import itertools

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.bpe import native_split
from analyzer.bpe.ranked import (
    CompiledRanked,
    RankedModel,
    digit_bits,
    hugging_face_symbols,
    merge_all,
    pair_table,
    split_steps,
    tiktoken_encode,
)
from analyzer.bpe.words import split_words, word_spaces

compiled = pytest.mark.skipif(not native_split.available(),
                              reason="the compiled engine is not built here")
many = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALPHABET = "abc"
words = st.text(alphabet=ALPHABET, min_size=1, max_size=40)


@st.composite
def tiktoken_ranks(draw) -> dict[bytes, int]:
    """Every byte, then some tokens of two to five letters of the alphabet, ranked at random
    (tiktoken takes any ranks, not only those a training would make)."""
    tokens = draw(st.lists(st.text(alphabet=ALPHABET, min_size=2, max_size=5), unique=True,
                           max_size=25))
    order = draw(st.permutations(range(len(tokens))))
    ranks = {bytes([byte]): byte for byte in range(256)}
    for rank, index in enumerate(order):
        ranks[tokens[index].encode()] = 256 + rank
    return ranks


def tiktoken_library(ranks: dict[bytes, int]):
    tiktoken = pytest.importorskip("tiktoken")
    # one piece: the whole text (tiktoken's pattern engine matches any text with this)
    return tiktoken.Encoding(f"test {id(ranks)}", pat_str=r"[\s\S]+", mergeable_ranks=ranks,
                             special_tokens={})


@many
@given(ranks=tiktoken_ranks(), text=words)
def test_the_tiktoken_reference_equals_tiktoken(ranks, text):
    assert tiktoken_encode(text.encode(), ranks) == tiktoken_library(ranks).encode_ordinary(text)


@many
@given(ranks=tiktoken_ranks(), text=words)
def test_the_pair_table_merges_as_tiktoken_does(ranks, text):
    """tiktoken ranks joined bytes; the table ranks pairs of ids: the same tokens (a piece
    that is a token is looked up whole first, as tiktoken does)."""
    data = text.encode()
    whole = [ranks[data]] if data in ranks else None
    assert (whole or merge_all([ranks[bytes([b])] for b in data], pair_table(ranks))) \
        == tiktoken_encode(data, ranks)


@st.composite
def hugging_face_merges(draw) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A vocabulary of the alphabet's letters and random merges of its tokens, a pair now and
    then listed twice (Hugging Face keeps the later rank)."""
    vocab = {letter: i for i, letter in enumerate(ALPHABET)}
    merges = []
    for _ in range(draw(st.integers(0, 20))):
        tokens = list(vocab)
        left, right = draw(st.sampled_from(tokens)), draw(st.sampled_from(tokens))
        if len(left + right) > 8:
            continue
        merges.append((left, right))
        vocab.setdefault(left + right, len(vocab))
    if merges and draw(st.booleans()):
        merges.append(draw(st.sampled_from(merges)))
    return vocab, merges


def hugging_face_library(vocab, merges):
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer(tokenizers.models.BPE(vocab, merges))


@many
@given(model=hugging_face_merges(), text=words)
def test_merge_all_equals_hugging_face_s_bpe(model, text):
    vocab, merges = model
    table = {}
    for rank, (left, right) in enumerate(merges):
        table[(vocab[left], vocab[right])] = (rank, vocab[left + right])
    symbols = hugging_face_symbols(text, vocab, False, None, False)
    assert merge_all(symbols, table) == hugging_face_library(vocab, merges).encode(text).ids


def test_hugging_face_symbols_fall_back_to_bytes_then_to_the_unknown_token():
    vocab = {"a": 0, "<unk>": 1, **{f"<0x{b:02X}>": 2 + b for b in range(256)}}
    assert hugging_face_symbols("aé", vocab, True, 1, False) == [0, 2 + 0xC3, 2 + 0xA9]
    without = {"a": 0, "<unk>": 1}
    assert hugging_face_symbols("éé", without, False, 1, True) == [1]
    assert hugging_face_symbols("éé", without, False, 1, False) == [1, 1]
    assert hugging_face_symbols("éaé", without, False, None, False) == [0]


# --- The compiled engine against the references ------------------------------------------------


@st.composite
def ranked_models(draw) -> RankedModel:
    """A model of any shape the engine takes: tiktoken's (derived, bytes, whole first) or
    Hugging Face's (merges given: byte-level or characters with byte fallback)."""
    if draw(st.booleans()):
        ranks = draw(tiktoken_ranks())
        pieces = [None] * (max(ranks.values()) + 1)
        for token, rank in ranks.items():
            pieces[rank] = token
        return RankedModel(pieces, [], [ranks[bytes([b])] for b in range(256)], "bytes",
                           whole_first=True, derived=True)
    vocab, merges = draw(hugging_face_merges())
    characters = draw(st.booleans())
    pieces = [token.encode() for token in vocab]
    byte_ids = list(range(len(pieces), len(pieces) + 256))
    pieces += [None] * 256  # the byte tokens: never a character's or a chunk's own
    if not characters:  # byte-level: each byte its own symbol, the letters' too
        byte_ids = [vocab[chr(b)] if chr(b) in vocab else byte_ids[b] for b in range(256)]
    table = {}
    for rank, (left, right) in enumerate(merges):
        table[(vocab[left], vocab[right])] = (rank, vocab[left + right])
    return RankedModel(pieces, [(left, right, rank, made) for (left, right), (rank, made) in table.items()],
                       byte_ids, "characters" if characters else "bytes",
                       whole_first=draw(st.booleans()))


texts = st.text(alphabet=ALPHABET + "é ", max_size=60) | st.builds(
    lambda letter, n: letter * n, st.sampled_from(ALPHABET), st.integers(0, 300))


@compiled
@many
@given(model=ranked_models(), chunk=texts)
def test_the_engine_encodes_a_chunk_as_the_reference_does(model, chunk):
    engine = CompiledRanked(model, [], native_split.unicode_tables())  # no steps: one chunk
    assert engine.encode(chunk) == (model.encode(chunk.encode()) if chunk else [])


@compiled
@many
@given(model=ranked_models(), chunk=st.text(alphabet=ALPHABET + "é", min_size=40, max_size=70))
def test_chunks_either_side_of_the_short_scan_encode_as_the_reference_does(model, chunk):
    # ranked.c merges a chunk of up to 48 symbols by a scan, a longer one by a heap
    engine = CompiledRanked(model, [], native_split.unicode_tables())
    assert engine.encode(chunk) == model.encode(chunk.encode())


@compiled
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=ranked_models(), batch=st.lists(texts, max_size=12),
       threads=st.sampled_from([1, 2, 3]))
def test_counts_and_split_words_are_those_of_the_tokens(model, batch, threads):
    steps = [("words", True)]
    engine = CompiledRanked(model, steps, native_split.unicode_tables())
    counts, split = engine.count(batch, threads=threads)
    pieces = {i: piece for i, piece in enumerate(model.pieces) if piece is not None}
    for text, count, cut in zip(batch, counts, split):
        ids = engine.encode(text)
        assert count == len(ids)
        spelled = [_bytes_of(model, i, pieces) for i in ids]
        assert cut == split_words(text, spelled)


def _bytes_of(model: RankedModel, token: int, pieces: dict[int, bytes]) -> bytes:
    """What a token of a test model spells: its piece, or the byte it falls back to."""
    if token in pieces:
        return pieces[token]
    return bytes([model.byte_ids.index(token)])


@compiled
def test_a_word_is_split_where_a_token_starts_inside_it_across_chunks():
    """Words run across chunks (`cat.` is two chunks under most patterns): the chunk's start
    inside a word splits it; whitespace of every kind ends one."""
    pieces = [bytes([b]) for b in range(256)] + [b"cat", b" sat"]
    model = RankedModel(pieces, [], list(range(256)), "bytes", whole_first=True, derived=True)
    engine = CompiledRanked(model, [("gpt2", False)], native_split.unicode_tables())
    # "cat\u00a0sat": the no-break space is a chunk of its own, so "sat" has no space before
    # it, is no token, and is cut into its letters
    texts = ["cat", "cat.", "cat sat", "c\u3000cat", "cat\u00a0sat", "sat", "x y z", "éé"]
    counts, split = engine.count(texts)
    assert split == [0, 1, 0, 0, 1, 1, 0, 1]
    assert counts == [1, 2, 2, 5, 6, 3, 5, 4]  # a character of n bytes, n byte tokens


@compiled
def test_counts_stay_exact_past_the_threads_table_of_chunks_met():
    """A thread keeps the chunks it has met in a table that starts again when full (2^16 of
    them, small enough to stay in the processor's cache); the chunks after that are counted
    again, as they were."""
    pieces = [bytes([b]) for b in range(256)] + [b" a", b" ab", b"ab"]
    merges = [(97, 98, 0, 258), (32, 97, 1, 256), (256, 98, 2, 257)]
    model = RankedModel(pieces, merges, list(range(256)), "bytes")
    engine = CompiledRanked(model, [("gpt2", False)], native_split.unicode_tables())
    # 120,000 distinct chunks (" ab" and a number in letters), then the same again
    words = [" ab" + "".join(chr(97 + int(d)) for d in str(n)) for n in range(120_000)]
    texts = [" ".join(words[i:i + 40]).strip() for i in range(0, len(words), 40)] * 2
    counts, _ = engine.count(texts, threads=1)
    assert counts == [len(engine.encode(text)) for text in texts]
    assert len(set(words)) > 2 ** 16


@compiled
def test_a_lone_surrogate_is_refused_in_words():
    model = RankedModel([bytes([b]) for b in range(256)], [], list(range(256)), derived=True,
                        whole_first=True)
    engine = CompiledRanked(model, [("gpt2", False)], native_split.unicode_tables())
    with pytest.raises(ValueError, match="lone surrogate"):
        engine.count(["ok", "a\ud800b"])


@compiled
def test_a_model_that_names_an_id_it_lacks_is_refused():
    with pytest.raises(ValueError, match="merge names an id"):
        CompiledRanked(RankedModel([b"a", b"b"], [(0, 7, 0, 1)], [0] * 256), [],
                       native_split.unicode_tables())


def test_word_spaces_are_python_s_whitespace():
    spaces = word_spaces()
    found = {code for code in range(0x3001) if spaces[code >> 3] >> (code & 7) & 1}
    assert found == {code for code in range(0x110000) if chr(code).isspace()}


# --- The production tokenizers' patterns in the splitter ---------------------------------------


def isolated(pattern: str, text: str) -> list[str]:
    """Hugging Face's Split(behavior="isolated"), by `regex`: each match, and the text
    between matches."""
    found, at = [], 0
    for match in regex.finditer(pattern, text):
        if match.start() > at:
            found.append(text[at:match.start()])
        found.append(match.group())
        at = match.end()
    if at < len(text):
        found.append(text[at:])
    return found


PRODUCTION = sorted(native_split.PRODUCTION_PATTERNS)
PATTERN_TEXT = st.text(alphabet=(
    " \t\n\r\x0b\x0c\x85\xa0\u3000aAsSdDlLvVrReE\u017f'\"/.,!?-#$%^&*()[]{}~xyz"
    "\u01c5\u02b0\u05d0\u0300\u0301\u0903\u20dd0123\u0663\u2167\u00bd\u00b2"
    "кКΩ中文日本語ひらがなカタカナ한국\u2581\u2581\u2581\U0001f600\u200d\u00a9\u2014\x00\x1f"),
    max_size=60) | st.text(max_size=40)


@compiled
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=PATTERN_TEXT, name=st.sampled_from(PRODUCTION))
def test_each_production_pattern_cuts_where_regex_does(text, name):
    _, pattern = native_split.PRODUCTION_PATTERNS[name]
    assert split_steps(text, [(name, True)], native_split.unicode_tables()) == isolated(pattern, text)


@compiled
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=PATTERN_TEXT)
def test_steps_cut_each_piece_as_a_text_of_its_own(text):
    """DeepSeek's three splits: each later one cuts each piece the one before made, its
    lookarounds seeing the piece's ends."""
    names = ["numbers", "kana-han", "deepseek"]
    expected = [text] if text else []
    for name in names:
        pattern = native_split.PRODUCTION_PATTERNS[name][1]
        expected = list(itertools.chain.from_iterable(isolated(pattern, piece) for piece in expected))
    found = split_steps(text, [(name, True) for name in names], native_split.unicode_tables())
    assert found == expected


@compiled
def test_findall_steps_drop_what_their_pattern_does_not_match():
    tables = native_split.unicode_tables()
    assert split_steps("ab12cd", [("numbers", False)], tables) == ["12"]
    assert split_steps("ab12cd", [("numbers", True)], tables) == ["ab", "12", "cd"]


@compiled
def test_the_digits_step_follows_its_own_table_when_given():
    tables = native_split.unicode_tables()
    assert split_steps("a1b", [("digits", True)], tables) == ["a", "1", "b"]
    assert split_steps("a1b", [("digits", True)], tables, digit_bits("b")) == ["a1", "b"]
