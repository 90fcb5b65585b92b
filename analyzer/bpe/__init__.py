"""Byte-level BPE: the exact, fast engine the analyzer runs, beside its literal reference.

Public API (what the rest of the analyzer uses):

- `train(texts, vocab_size, *, pretokenizer="none", weights=None, min_pair_count=2,
  tie_break="lexicographic", progress=None)`: the merge list; a text of weight w counts as w
  copies of itself; a pre-tokenizer cuts texts into chunks that merges never cross
- `train_detailed(...)`: the same, returning a `Training` with counts and the stop reason;
  given `TokenIds` (texts already in a base vocabulary's ids) instead of texts, BPE continues
  from those ids (`reference.train_ids`)
- `distinct(texts, pretokenizer, weights=None)`: the distinct chunks and their counts that
  `train_detailed` trains on (given them with `weights`, the same training)
- `continue_training(texts, base, vocab_size, *, pretokenizer=...)`: more merges on top of a
  merge list, each chunk first encoded with the base (`reference.continue_training`)
- `encode(text, merges, pretokenizer=...)`, `decode(ids, merges)`
- `count_tokens(texts, merges, sizes, pretokenizer=...)`: `{size: [tokens of each text]}` in
  one replay
- `Vocabulary(merges, pretokenizer=...)`: the same operations with the merge list prepared once,
  and `measure(texts, sizes, roundtrip=True)`: counts plus a decode check, in one replay
- `train_parity(texts_by_language, vocab_size, *, dev=None, global_merges=0, ...)`: parity-aware
  merges (each merge serves the language that compresses worst), exactly
  `reference.train_parity`'s
- `train_by_language(texts_by_language, vocab_size, *, parity=False, ...)`: a
  `LanguageTraining`, with how many occurrences each merge replaced in each language
- `PRETOKENIZERS`: the built-in pre-tokenizers (`none`, `words`, `gpt2`, `cl100k`, `o200k`,
  `llama3`, and `superbpe`, SuperBPE's stage 2, which splits around its matches); `re:<pattern>`
  names a regular expression of one's own (its matches are the chunks), `split:<pattern>` one
  that splits around its matches

Two engines give these, with identical results: the compiled one (a C extension, the default)
and the pure-Python one (`ANALYZER_ENGINE=python`, and the fallback); `ENGINE` says which runs.
`analyzer.bpe.reference` is the slow, literal definition every result here must equal.

>>> merges = train(["low lower lowest"] * 2, 260)
>>> decode(encode("lowest", merges), merges)
'lowest'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from . import reference
from .by_language import (
    ChunkCounts,
    ChunkTables,
    LanguageTraining,
    encoded_by,
    train_by_language,
    train_parity,
)
from .contract import (
    MAX_VOCAB_SIZE,
    BaseVocabulary,
    Engine,
    Measurement,
    Progress,
    TokenIds,
    Training,
)
from .engines import ENGINE, ENGINES, engine
from .pretokenize import PRETOKENIZERS, Pretokenizer, PretokenizerError, distinct_chunks, resolve
from .reference import MIN_PAIR_COUNT, Merge, Pair

Vocabulary: type[BaseVocabulary] = engine.Vocabulary
"""The active engine's `Vocabulary` class."""


def train(
    texts: str | Iterable[str],
    vocab_size: int,
    *,
    pretokenizer: str | None = "none",
    weights: Sequence[int] | None = None,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
) -> list[Merge]:
    """Learn merges on a text or several; exactly `reference.train_many`'s result (on the
    texts repeated as the weights say, each copy in place; with a pre-tokenizer, on the list of
    every chunk of every text, in order).

    >>> train(["abab", "ab"], 300)
    [((97, 98), 256)]
    >>> train(["ab ab"], 300, pretokenizer="words")  # no merge crosses the space
    [((97, 98), 256)]
    """
    return train_detailed(texts, vocab_size, pretokenizer=pretokenizer, weights=weights,
                          min_pair_count=min_pair_count, tie_break=tie_break,
                          progress=progress).merges


def train_detailed(
    texts: str | Iterable[str],
    vocab_size: int,
    *,
    pretokenizer: str | None = "none",
    weights: Sequence[int] | None = None,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
) -> Training:
    """`train`, returning counts, replacements and why training stopped as well.

    With a pre-tokenizer the engine trains on each distinct chunk once, weighted by how often
    it occurs (in order of first appearance, so "first" ties fall as in the full list).
    """
    if resolve(pretokenizer) is not None:
        texts, weights = distinct(texts, pretokenizer, weights)
    return engine.train_detailed(texts, vocab_size, weights=weights, min_pair_count=min_pair_count,
                                 tie_break=tie_break, progress=progress)


def distinct(texts: str | Iterable[str], pretokenizer: str | None,
             weights: Sequence[int] | None = None) -> tuple[list[str], Sequence[int] | None]:
    """The texts' distinct chunks in order of first appearance, each weighted by how often it
    occurs (texts' weights applied): training on them equals training on every chunk, in
    order. Without a pre-tokenizer, the texts and their weights, checked."""
    from .contract import check_weights
    from .packing import as_text_list

    text_list = as_text_list(texts)
    weight_list = check_weights(text_list, weights)
    split = resolve(pretokenizer)
    if split is None:
        return text_list, weight_list
    return distinct_chunks(text_list, split, weight_list)


def continue_training(
    texts: str | Iterable[str],
    base: Sequence[Merge],
    vocab_size: int,
    *,
    pretokenizer: str | None = "none",
    weights: Sequence[int] | None = None,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
) -> Training:
    """Continue a merge list to `vocab_size`: each text cut into chunks by `pretokenizer` (which
    may differ from the one the base was trained with), each chunk encoded with `base`, and BPE
    on those ids, new ids from `256 + len(base)` up. The `Training` holds the added merges
    (the whole list is `base + training.merges`, so a size is still a prefix) and `n_bytes`
    counts the tokens the base gives. Exactly `reference.continue_training`'s merges.

    >>> base = train(["low lower lowest"] * 2, 258)
    >>> continue_training(["low low low low"], base, 260, pretokenizer="superbpe").merges
    [((32, 257), 258), ((258, 258), 259)]
    """
    chunks, counts = distinct(texts, pretokenizer, weights)
    return engine.train_detailed(encoded_by(base, chunks), vocab_size, weights=counts,
                                 min_pair_count=min_pair_count, tie_break=tie_break,
                                 progress=progress)


def encode(text: str, merges: Sequence[Merge], pretokenizer: str | None = "none") -> list[int]:
    """The ids of `text` under `merges`, exactly as `reference.encode` (chunk by chunk with a
    pre-tokenizer).

    >>> encode("aaaa", [((97, 97), 256)])
    [256, 256]
    """
    return Vocabulary(merges, pretokenizer).encode(text)


def decode(ids: Iterable[int], merges: Sequence[Merge]) -> str:
    """Text from ids, exactly as `reference.decode`.

    >>> decode([256, 98], [((97, 97), 256)])
    'aab'
    """
    return Vocabulary(merges).decode(ids)


def count_tokens(texts: str | Iterable[str], merges: Sequence[Merge], sizes: Iterable[int], *,
                 pretokenizer: str | None = "none",
                 weights: Sequence[int] | None = None) -> dict[int, list[int]]:
    """`{size: [tokens of each text]}` for each size, from one replay of the merge list. Each
    text is counted once: `weights` (accepted so that training and counting take the same
    arguments) only matter for training.

    >>> count_tokens(["aaaa", "ab"], [((97, 97), 256), ((256, 256), 257)], [256, 257, 258])
    {256: [4, 2], 257: [2, 2], 258: [1, 2]}
    """
    if weights is not None:
        from .contract import check_weights
        from .packing import as_text_list

        texts = as_text_list(texts)
        check_weights(texts, weights)
    return Vocabulary(merges, pretokenizer).count_tokens(texts, sizes)


__all__ = [
    "ChunkCounts",
    "ChunkTables",
    "BaseVocabulary",
    "ENGINE",
    "ENGINES",
    "MAX_VOCAB_SIZE",
    "MIN_PAIR_COUNT",
    "PRETOKENIZERS",
    "Engine",
    "LanguageTraining",
    "Measurement",
    "Merge",
    "Pair",
    "Pretokenizer",
    "PretokenizerError",
    "Progress",
    "TokenIds",
    "Training",
    "Vocabulary",
    "continue_training",
    "count_tokens",
    "decode",
    "distinct",
    "encode",
    "reference",
    "train",
    "train_by_language",
    "train_detailed",
    "train_parity",
]
