"""Continued training, exactly: BPE from texts already in a base vocabulary's ids
(`TokenIds`), and `continue_training` of a merge list, equal the reference (`train_ids`,
`continue_training`) in both engines; pre-tokenizers that split around their matches equal the
reference's definition.

Every test runs once per engine, as in test_bpe_engine.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import bpe
from analyzer.bpe import reference as ref
from analyzer.bpe.added import AddedMerges, RankedMerges
from analyzer.bpe.pretokenize import PRETOKENIZERS, SPLIT_AROUND, resolve
from helpers import shared_corpus

engine_settings = settings(max_examples=200, deadline=None,
                           suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])

# A base's ids: a few distinct ones, so that runs ("x x x x") and ties are common, drawn from
# anywhere below the base's size (production bases reach 200,019 and 262,145 ids).
first_ids = st.sampled_from([256, 300, 100_277, 262_145])


@st.composite
def id_sequences(draw):
    first_id = draw(first_ids)
    alphabet = draw(st.lists(st.integers(0, first_id - 1), min_size=1, max_size=4, unique=True))
    sequences = draw(st.lists(st.lists(st.sampled_from(alphabet), max_size=14), max_size=5))
    return first_id, sequences


tie_breaks = st.sampled_from(["lexicographic", "first"])
min_counts = st.sampled_from([1, 2])
added = st.integers(0, 12)


@pytest.mark.slow
@engine_settings
@given(case=id_sequences(), n=added, tie_break=tie_breaks, min_count=min_counts)
def test_training_from_ids_equals_the_reference(engine, case, n, tie_break, min_count):
    first_id, sequences = case
    expected = ref.train_ids(sequences, first_id, first_id + n, min_pair_count=min_count,
                             tie_break=tie_break)
    training = engine.train_detailed(bpe.TokenIds(sequences, first_id), first_id + n,
                                     min_pair_count=min_count, tie_break=tie_break)
    assert training.merges == expected
    assert training.n_bytes == sum(map(len, sequences))  # tokens at the start: the base's
    assert training.tokens_after(len(expected)) == sum(
        len(_apply(ids, expected)) for ids in sequences)


@pytest.mark.slow
@engine_settings
@given(case=id_sequences(), weights=st.lists(st.integers(1, 3), min_size=5, max_size=5),
       n=added, tie_break=tie_breaks)
def test_weighted_training_from_ids_equals_the_reference_on_copies(engine, case, weights, n,
                                                                   tie_break):
    first_id, sequences = case
    weights = weights[:len(sequences)]
    copies = [ids for ids, w in zip(sequences, weights) for _ in range(w)]
    expected = ref.train_ids(copies, first_id, first_id + n, tie_break=tie_break)
    got = engine.train_detailed(bpe.TokenIds(sequences, first_id), first_id + n,
                                weights=weights, tie_break=tie_break).merges
    assert got == expected


@pytest.mark.slow
@engine_settings
@given(case=id_sequences(), n=added, tie_break=tie_breaks, parity=st.booleans())
def test_grouped_training_from_ids_agrees_across_engines(engine, case, n, tie_break, parity):
    """Not parity-aware it is `train_ids` on all, with each group's share of the replacements;
    parity-aware the engines agree with each other (and, with one group, with `train_ids`)."""
    first_id, sequences = case
    groups = sorted(index % 2 for index in range(len(sequences)))
    ids = bpe.TokenIds(sequences, first_id)
    result = engine.train_grouped(ids, groups, first_id + n, parity=parity, tie_break=tie_break)
    if not parity:
        assert result.merges == ref.train_ids(sequences, first_id, first_id + n, tie_break=tie_break)
        assert [sum(column) for column in zip(*result.replaced_by_group)] == result.replaced
    other = bpe.ENGINES["python"]
    assert result == other.train_grouped(ids, groups, first_id + n, parity=parity,
                                         tie_break=tie_break)
    alone = engine.train_grouped(ids, [0] * len(sequences), first_id + n, parity=parity,
                                 tie_break=tie_break)
    assert alone.merges == ref.train_ids(sequences, first_id, first_id + n, tie_break=tie_break)


small_text = st.text(alphabet="ab ", max_size=30) | st.text(alphabet="aé中 .,1", max_size=25) | \
    st.text(max_size=25)
texts = st.lists(small_text, max_size=5)
pretokenizers = st.sampled_from(["none", "words", "gpt2", "superbpe", "split: "])


@engine_settings
@given(base_texts=texts, texts=texts, base_size=st.integers(256, 280), n=added,
       pretokenizer=pretokenizers, tie_break=tie_breaks)
def test_continuing_a_merge_list_equals_the_reference(engine, monkeypatch, base_texts, texts,
                                                      base_size, n, pretokenizer, tie_break):
    monkeypatch.setattr(bpe, "engine", engine)
    monkeypatch.setattr(bpe, "Vocabulary", engine.Vocabulary)
    base = ref.train_many(base_texts, base_size)
    split = resolve(pretokenizer)
    pattern = None if split is None else split.pattern
    around = split is not None and split.around
    vocab_size = 256 + len(base) + n
    expected = ref.continue_training(texts, base, vocab_size, pattern=pattern, around=around,
                                     tie_break=tie_break)
    training = bpe.continue_training(texts, base, vocab_size, pretokenizer=pretokenizer,
                                     tie_break=tie_break)
    assert base + training.merges == expected


@pytest.mark.slow
@engine_settings
@given(base_texts=texts, texts=texts, n=added, pretokenizer=pretokenizers, data=st.data())
def test_a_continued_vocabulary_encodes_and_counts_as_the_reference(engine, monkeypatch,
                                                                    base_texts, texts, n,
                                                                    pretokenizer, data):
    """Encoding a chunk with the whole list applies the base's merges, then the added ones:
    what the added merges were trained on. So the usual `Vocabulary`, with the second stage's
    pre-tokenizer, counts a continued vocabulary at every size."""
    monkeypatch.setattr(bpe, "engine", engine)
    monkeypatch.setattr(bpe, "Vocabulary", engine.Vocabulary)
    base = ref.train_many(base_texts, 270)
    merges = base + bpe.continue_training(texts, base, 256 + len(base) + n,
                                          pretokenizer=pretokenizer).merges
    split = resolve(pretokenizer)
    pattern, around = (None, False) if split is None else (split.pattern, split.around)
    vocabulary = engine.Vocabulary(merges, pretokenizer)
    sizes = sorted(set(data.draw(st.lists(st.integers(256, 256 + len(merges)), min_size=1,
                                          max_size=3))))
    counted = vocabulary.measure(texts, sizes, roundtrip=True)
    for size in sizes:
        assert counted.counts[size] == [
            len(ref.encode_chunks(text, merges[:size - 256], pattern, around)) for text in texts]
    assert counted.roundtrip_ok is not False


@engine_settings
@given(texts=texts, size=st.integers(256, 300), pretokenizer=pretokenizers)
def test_continuing_an_empty_base_is_training(engine, monkeypatch, texts, size, pretokenizer):
    monkeypatch.setattr(bpe, "engine", engine)
    monkeypatch.setattr(bpe, "Vocabulary", engine.Vocabulary)
    assert bpe.continue_training(texts, [], size, pretokenizer=pretokenizer).merges == \
        bpe.train(texts, size, pretokenizer=pretokenizer)


@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=60) | st.text(alphabet=" \n\r\t.,;!?1234567890aé", max_size=60))
def test_split_around_matches_is_the_reference_and_lossless(text):
    for name in [*SPLIT_AROUND, "split:\\s+", "split:[,.]"]:
        split = resolve(name)
        assert split is not None and split.around
        chunks = split.split(text)
        assert chunks == ref.pretokenize(text, split.pattern, around=True)
        assert "".join(chunks) == text and all(chunks)


def test_superbpe_is_the_published_stage_two_pattern():
    # PythonNut/superbpe, scripts/extend_tokenizer.sh: regex_string, in Split(behavior="isolated")
    assert PRETOKENIZERS["superbpe"] == r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"
    assert resolve("superbpe").split("It costs 12345 dollars... or   more") == \
        ["It costs ", "123", "45", " dollars", "...", " or", "  ", " more"]


def test_ids_outside_the_base_are_refused_naming_where(engine):
    with pytest.raises(ValueError, match="sequence 1, position 2: 300 is not an id of the base"):
        engine.train_detailed(bpe.TokenIds([[1, 2], [3, 4, 300]], 300), 310)
    with pytest.raises(ValueError, match="first_id is 100"):
        engine.train_detailed(bpe.TokenIds([[1, 2]], 100), 310)
    with pytest.raises(ValueError, match="below 300, the base vocabulary's size"):
        engine.train_detailed(bpe.TokenIds([[1, 2]], 300), 299)


def _apply(ids, merges):
    return ref.encode_ids(ids, merges)


@pytest.mark.corpora
def test_continued_training_on_real_text_equals_the_reference(engine, monkeypatch):
    """A base trained on English, continued on Hindi and Korean with SuperBPE's pattern."""
    udhr = shared_corpus("udhr")
    monkeypatch.setattr(bpe, "engine", engine)
    monkeypatch.setattr(bpe, "Vocabulary", engine.Vocabulary)
    english = (udhr / "eng_Latn.txt").read_text(encoding="utf-8").splitlines()[:6]
    others = [line for lang in ("hin_Deva", "kor_Hang")
              for line in (udhr / f"{lang}.txt").read_text(encoding="utf-8").splitlines()[:3]]
    base = bpe.train(english, 300, pretokenizer="gpt2")
    expected = ref.continue_training(others, base, 340, pattern=PRETOKENIZERS["superbpe"],
                                     around=True)
    assert base + bpe.continue_training(others, base, 340, pretokenizer="superbpe").merges == \
        expected


# Added merges over a base's ids (extending a production tokenizer): applying them and counting
# at every size equal the reference's merges applied one by one.


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(case=id_sequences(), n=added, tie_break=tie_breaks, probe=id_sequences())
def test_added_merges_apply_as_the_reference(case, n, tie_break, probe):
    first_id, sequences = case
    merges = ref.train_ids(sequences, first_id, first_id + n, min_pair_count=1,
                           tie_break=tie_break)
    added = AddedMerges(merges, first_id)
    # Texts the merges were learned on, and others over the same ids (runs like x x x x).
    others = [[token % first_id for token in ids] for ids in probe[1]]
    for ids in sequences + others:
        assert added.apply(ids) == ref.encode_ids(ids, merges)
        for k in range(len(merges) + 1):
            assert added.apply(ids, k) == ref.encode_ids(ids, merges[:k])
    sizes = range(first_id, added.size + 1)
    counts = added.counts(sequences + others, sizes)
    for size in sizes:
        assert counts[size] == [len(ref.encode_ids(ids, merges[:size - first_id]))
                                for ids in sequences + others]
    # Per group: what each merge replaced is how much it shortens the group's sequences.
    for group in (sequences, others):
        totals = [sum(len(ref.encode_ids(ids, merges[:k])) for ids in group)
                  for k in range(len(merges) + 1)]
        assert added.replaced([(added.trace(ids), 1) for ids in group]) == \
            [a - b for a, b in zip(totals, totals[1:])]


def _rank_merge_literally(data: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """tiktoken's rule, literally: from single bytes, join the leftmost adjacent pair whose
    bytes together have the lowest rank, until no joined pair has one."""
    parts = [bytes([b]) for b in data]
    while len(parts) > 1:
        found = [(ranks[a + b], i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if a + b in ranks]
        if not found:
            break
        _, i = min(found)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


@settings(max_examples=400, deadline=None)
@given(base_tokens=st.lists(st.text("ab c", min_size=2, max_size=4), max_size=8, unique=True),
       texts=st.lists(st.text("ab c", max_size=16), min_size=1, max_size=5), n=added,
       probe=st.text("ab c", max_size=20))
def test_ranked_merges_count_as_tiktoken_s_rule_at_every_size(base_tokens, texts, n, probe):
    # A base of ranks as production ones are (the bytes, then tokens in any order, not always
    # reachable by joining two others: Llama 3's " 오후" is not), texts in its ids, merges added
    # over them; applied by bytes, every prefix of them counts as the literal rule does.
    ranks = {bytes([b]): b for b in range(256)}
    for token in base_tokens:
        ranks.setdefault(token.encode(), len(ranks))
    tokens = {rank: token for token, rank in ranks.items()}
    first = len(ranks)

    def base_ids(text):
        return [ranks[part] for part in _rank_merge_literally(text.encode(), ranks)]

    merges = ref.train_ids([base_ids(t) for t in texts], first, first + n, min_pair_count=1)
    ranked = RankedMerges(merges, first, ranks, tokens.__getitem__)
    for text in [*texts, probe]:
        trace = ranked.trace(base_ids(text))
        for k in range(len(merges) + 1):
            allowed = dict(ranks)
            for rank in range(k):
                allowed.setdefault(ranked.token_bytes(first + rank), first + rank)
            want = _rank_merge_literally(text.encode(), allowed)
            assert trace.tokens_at(k) == len(want), (text, k)
            assert [ranked.token_bytes(t) for t in ranked.apply(base_ids(text), k)] == want


def test_added_merges_are_checked():
    with pytest.raises(ValueError, match="merge 0 creates id 1001; it must create 1000"):
        AddedMerges([((1, 2), 1001)], 1000)
    with pytest.raises(ValueError, match="merge 1 uses id 1002"):
        AddedMerges([((1, 2), 1000), ((1002, 2), 1001)], 1000)
    with pytest.raises(ValueError, match="size 999 is outside 1000..1001"):
        AddedMerges([((1, 2), 1000)], 1000).counts([[1, 2]], [999])
