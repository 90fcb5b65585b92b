"""The literal byte-level BPE: slow, short, and the contract the fast engine must meet.

Read this module first. Every function here does the obvious thing in the obvious way, so it
can serve as the oracle in tests and as teaching code. Both engines, the compiled one
(`analyzer.bpe.compiled`, the default) and the pure-Python fallback (`analyzer.bpe.pure`), give
exactly the same results, much faster.

A tiny session:

>>> merges = train("aaabdaaabac", 259)
>>> merges
[((97, 97), 256), ((97, 98), 257), ((256, 257), 258)]
>>> encode("aaabdaaabac", merges)
[258, 100, 258, 97, 99]
>>> decode([258, 100], merges)
'aaabd'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

Pair = tuple[int, int]
Merge = tuple[Pair, int]

MIN_PAIR_COUNT = 2
"""Training stops when the most frequent pair occurs fewer times than this."""

FIRST_NEW_ID = 256
TIE_BREAKS = ("lexicographic", "first")


def to_ids(text: str) -> list[int]:
    """The UTF-8 bytes of `text` as ints (bytes, not code points).

    >>> to_ids("añ")
    [97, 195, 177]
    """
    return list(text.encode("utf-8"))


def from_ids(ids: Iterable[int]) -> str:
    """Bytes back to text; a cut multi-byte character becomes U+FFFD instead of raising.

    >>> from_ids([97, 195])
    'a\\ufffd'
    """
    return bytes(ids).decode("utf-8", errors="replace")


def count_pairs(ids: Sequence[int]) -> dict[Pair, int]:
    """How often each adjacent pair occurs, overlaps included, in order of first occurrence.

    >>> count_pairs([9, 9, 9])
    {(9, 9): 2}
    >>> count_pairs([1])
    {}
    """
    counts: dict[Pair, int] = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids: Sequence[int], pair: Pair, new_id: int) -> list[int]:
    """A new list with each occurrence of `pair` replaced by `new_id`, left to right, no overlap.

    >>> merge([5, 5, 5], (5, 5), 300)
    [300, 5]
    """
    merged: list[int] = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


def train_many(
    texts: Iterable[str],
    vocab_size: int,
    *,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
) -> list[Merge]:
    """Learn merges over several texts; pairs never span two texts.

    Each step counts the pairs within every text, sums them, and merges the most frequent.
    Ties go to the smallest `(left, right)` ("lexicographic"), or to the pair whose first
    occurrence comes earliest, texts in order ("first": what `max` over an insertion-ordered
    dict gives, as minbpe's BasicTokenizer does).

    >>> train_many(["abab", "ab"], 300)
    [((97, 98), 256)]
    """
    check_training_args(vocab_size, min_pair_count, tie_break)
    return train_ids([to_ids(text) for text in texts], FIRST_NEW_ID, vocab_size,
                     min_pair_count=min_pair_count, tie_break=tie_break)


def train_ids(
    sequences: Iterable[Sequence[int]],
    first_id: int,
    vocab_size: int,
    *,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
) -> list[Merge]:
    """BPE over sequences of ids that are already tokens (bytes, or a base vocabulary's ids):
    the same steps as `train_many`, with new ids from `first_id` up to `vocab_size - 1`.
    `train_many` is this on the texts' bytes from 256; continuing a vocabulary is this on the
    ids the vocabulary gives (`continue_training`).

    >>> train_ids([[300, 7, 300, 7]], 1000, 1002)
    [((300, 7), 1000)]
    """
    check_training_args(vocab_size, min_pair_count, tie_break, first_id)
    sequences = [list(ids) for ids in sequences]
    merges: list[Merge] = []
    for new_id in range(first_id, vocab_size):
        best = best_pair(sequences, min_pair_count, tie_break)
        if best is None:
            break
        sequences = [merge(ids, best, new_id) for ids in sequences]
        merges.append((best, new_id))
    return merges


def continue_training(
    texts: Iterable[str],
    base: Sequence[Merge],
    vocab_size: int,
    *,
    pattern: str | None = None,
    around: bool = False,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
) -> list[Merge]:
    r"""Continue a merge list: cut each text into chunks (`pattern` and `around`, as
    `pretokenize`), encode each chunk with `base`, then `train_ids` on those sequences with new
    ids from the base's size up. The result is the whole list, base first, so a size is still
    a prefix. From an empty base it is `train_many` on the chunks.

    >>> base = [((97, 97), 256)]
    >>> continue_training(["aaaa aaaa aaaa"], base, 259, pattern=r"\s?\S+")
    [((97, 97), 256), ((256, 256), 257), ((32, 257), 258)]
    """
    chunks = [chunk for text in texts for chunk in pretokenize(text, pattern, around)]
    first_id = FIRST_NEW_ID + len(base)
    return [*base, *train_ids([encode(chunk, base) for chunk in chunks], first_id, vocab_size,
                               min_pair_count=min_pair_count, tie_break=tie_break)]


def best_pair(sequences: Iterable[Sequence[int]], min_pair_count: int, tie_break: str) -> Pair | None:
    """The pair to merge next over these sequences (counts summed over them), or None when
    none occurs `min_pair_count` times.

    >>> best_pair([[1, 2, 1, 2], [3, 4, 3, 4]], 2, "lexicographic")
    (1, 2)
    >>> best_pair([[3, 4, 3, 4], [1, 2, 1, 2]], 2, "first")
    (3, 4)
    """
    counts: dict[Pair, int] = {}
    for ids in sequences:
        for pair, n in count_pairs(ids).items():
            counts[pair] = counts.get(pair, 0) + n
    if not counts:
        return None
    if tie_break == "first":
        best = max(counts, key=lambda pair: counts[pair])  # the first of the largest
    else:
        best = min(counts, key=lambda pair: (-counts[pair], pair))
    return best if counts[best] >= min_pair_count else None


def train_parity(
    texts: Mapping[str, Sequence[str]],
    vocab_size: int,
    *,
    dev: Mapping[str, Sequence[str]] | None = None,
    global_merges: int = 0,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
) -> list[Merge]:
    """Parity-aware BPE (Foroutan et al. 2025, arXiv 2508.04796): each step serves the language
    that compresses worst. Its dev texts (`dev`, by default the training texts) are counted in
    tokens under the merges so far; the language with the most tokens (ties: the smaller code)
    contributes its most frequent pair, counted over its own training texts only (the usual
    tie-break and `min_pair_count`; when it has no such pair, the next worst language does), and
    the merge is applied to every language. The first `global_merges` merges are ordinary shared
    merges over all languages' texts together (the paper's hybrid).

    >>> texts = {"eng": ["aaaaaaaa"], "kor": ["bcdbcdbcd"]}
    >>> train_parity(texts, 258)  # kor has the most tokens (9), so its pair comes first
    [((98, 99), 256), ((97, 97), 257)]
    >>> train_many(texts["eng"] + texts["kor"], 258)  # shared: the most frequent pair first
    [((97, 97), 256), ((98, 99), 257)]
    """
    check_training_args(vocab_size, min_pair_count, tie_break)
    dev = texts if dev is None else dev
    if set(dev) != set(texts):
        raise ValueError("dev must have the same languages as texts")
    languages = sorted(texts)
    train_ids = {lang: [to_ids(text) for text in texts[lang]] for lang in languages}
    dev_ids = {lang: [to_ids(text) for text in dev[lang]] for lang in languages}
    merges: list[Merge] = []
    for new_id in range(FIRST_NEW_ID, vocab_size):
        if len(merges) < global_merges:
            turns = [languages]  # one turn: every language's texts together
        else:
            worst_first = sorted(languages, key=lambda lang: (-sum(map(len, dev_ids[lang])), lang))
            turns = [[lang] for lang in worst_first]
        best = None
        for turn in turns:
            best = best_pair([ids for lang in turn for ids in train_ids[lang]], min_pair_count,
                             tie_break)
            if best is not None:
                break
        if best is None:
            break
        train_ids = {lang: [merge(ids, best, new_id) for ids in seqs] for lang, seqs in train_ids.items()}
        dev_ids = {lang: [merge(ids, best, new_id) for ids in seqs] for lang, seqs in dev_ids.items()}
        merges.append((best, new_id))
    return merges


def train(text: str, vocab_size: int) -> list[Merge]:
    """Learn up to `vocab_size - 256` merges on one text (lexicographic ties).

    >>> train("aaaaaaaa", 300)
    [((97, 97), 256), ((256, 256), 257)]
    >>> train("anything", 256)
    []
    """
    return train_many([text], vocab_size)


def encode(text: str, merges: Sequence[Merge]) -> list[int]:
    """Apply each merge once, in the given order.

    >>> encode("aaaa", [((97, 97), 256)])
    [256, 256]
    """
    ids = to_ids(text)
    for pair, new_id in merges:
        ids = merge(ids, pair, new_id)
    return ids


def encode_ids(ids: Sequence[int], merges: Sequence[Merge]) -> list[int]:
    """Apply each merge once, in the given order, to ids a base vocabulary gave (continued
    training's merges on the base's ids; `encode` is this on a text's bytes).

    >>> encode_ids([300, 7, 300, 7, 300], [((300, 7), 1000), ((1000, 1000), 1001)])
    [1001, 300]
    """
    ids = list(ids)
    for pair, new_id in merges:
        ids = merge(ids, pair, new_id)
    return ids


def decode(ids: Iterable[int], merges: Sequence[Merge]) -> str:
    """Expand every id to its bytes, recursively, and read them as UTF-8.

    >>> decode([257], [((97, 97), 256), ((256, 98), 257)])
    'aab'
    """
    parts = {new_id: pair for pair, new_id in merges}

    def expand(token: int) -> list[int]:
        if token in parts:
            left, right = parts[token]
            return expand(left) + expand(right)
        if 0 <= token < FIRST_NEW_ID:
            return [token]
        raise ValueError(f"unknown token id {token}: neither a byte nor a learned id")

    return from_ids([byte for token in ids for byte in expand(token)])


def pretokenize(text: str, pattern: str | None, around: bool = False) -> list[str]:
    r"""The chunks of `text` under a pre-tokenizer's pattern: its non-overlapping matches, in
    order (`regex`, which the production patterns need); the whole text when there is none.
    With `around`, the text is split around the matches instead: every match is a chunk, and so
    is every stretch of text between two matches (Hugging Face's `Split(pattern,
    behavior="isolated")`, which SuperBPE uses), so nothing is ever lost. Training with a
    pre-tokenizer is `train_many` over every chunk of every text, in order; encoding encodes each
    chunk on its own (`encode_chunks`).

    >>> pretokenize("ab cd", r"\s?\S+|\s+")
    ['ab', ' cd']
    >>> pretokenize("a, b; c", r" ?[,;]", around=True)
    ['a', ',', ' b', ';', ' c']
    """
    import regex

    if pattern is None:
        return [text]
    if not around:
        return regex.findall(pattern, text)
    chunks = []
    end = 0
    for match in regex.finditer(pattern, text):
        if match.start() == match.end():
            continue  # an empty match cuts nothing
        if match.start() > end:
            chunks.append(text[end:match.start()])
        chunks.append(match.group())
        end = match.end()
    if end < len(text):
        chunks.append(text[end:])
    return chunks


def encode_chunks(text: str, merges: Sequence[Merge], pattern: str | None,
                  around: bool = False) -> list[int]:
    r"""`encode` of each chunk of `text`, one after the other.

    >>> encode_chunks("aa aa", [((97, 97), 256), ((32, 256), 257)], r"\s?\S+|\s+")
    [256, 257]
    """
    return [token for chunk in pretokenize(text, pattern, around) for token in encode(chunk, merges)]


def vocab_curve(text: str, sizes: Iterable[int]) -> list[tuple[int, int]]:
    """Token count of `text` at each size, each size trained from scratch.

    >>> vocab_curve("aaaa", [256, 257, 300])
    [(256, 4), (257, 2), (300, 2)]
    """
    return [(size, len(encode(text, train(text, size)))) for size in sizes]


def check_training_args(vocab_size: int, min_pair_count: int, tie_break: str,
                        first_id: int = FIRST_NEW_ID) -> None:
    """Raise ValueError for arguments no training can honour."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, not {vocab_size!r}")
    if vocab_size < FIRST_NEW_ID:
        raise ValueError(f"vocab_size {vocab_size} is below {FIRST_NEW_ID}, the byte alphabet")
    if vocab_size < first_id:
        raise ValueError(f"vocab_size {vocab_size} is below {first_id}, the base vocabulary's size")
    if isinstance(min_pair_count, bool) or not isinstance(min_pair_count, int) or min_pair_count < 1:
        raise ValueError(f"min_pair_count must be an int >= 1, not {min_pair_count!r}")
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {', '.join(TIE_BREAKS)}, not {tie_break!r}")
