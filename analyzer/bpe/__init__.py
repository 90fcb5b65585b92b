"""Byte-level BPE: the exact, fast engine the analyzer runs, beside its literal reference.

Public API (what the rest of the analyzer uses):

- `train(texts, vocab_size, *, weights=None, min_pair_count=2, tie_break="lexicographic",
  progress=None)`: the merge list; a text of weight w counts as w copies of itself
- `train_detailed(...)`: the same, returning a `Training` with counts and the stop reason
- `encode(text, merges)`, `decode(ids, merges)`
- `count_tokens(texts, merges, sizes)`: `{size: [tokens of each text]}` in one replay
- `Vocabulary(merges)`: the same operations with the merge list prepared once, and
  `measure(texts, sizes, roundtrip=True)`: counts plus a decode check, in one replay

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
from .contract import MAX_VOCAB_SIZE, Measurement, Progress, Training
from .engines import ENGINE, ENGINES, engine
from .reference import MIN_PAIR_COUNT, Merge, Pair

Vocabulary = engine.Vocabulary
"""The active engine's `Vocabulary` class."""


def train(
    texts: str | Iterable[str],
    vocab_size: int,
    *,
    weights: Sequence[int] | None = None,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
) -> list[Merge]:
    """Learn merges on a text or several; exactly `reference.train_many`'s result (on the
    texts repeated as the weights say, each copy in place).

    >>> train(["abab", "ab"], 300)
    [((97, 98), 256)]
    """
    return train_detailed(texts, vocab_size, weights=weights, min_pair_count=min_pair_count,
                          tie_break=tie_break, progress=progress).merges


def train_detailed(
    texts: str | Iterable[str],
    vocab_size: int,
    *,
    weights: Sequence[int] | None = None,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
) -> Training:
    """`train`, returning counts, replacements and why training stopped as well."""
    return engine.train_detailed(texts, vocab_size, weights=weights, min_pair_count=min_pair_count,
                                 tie_break=tie_break, progress=progress)


def encode(text: str, merges: Sequence[Merge]) -> list[int]:
    """The ids of `text` under `merges`, exactly as `reference.encode`.

    >>> encode("aaaa", [((97, 97), 256)])
    [256, 256]
    """
    return Vocabulary(merges).encode(text)


def decode(ids: Iterable[int], merges: Sequence[Merge]) -> str:
    """Text from ids, exactly as `reference.decode`.

    >>> decode([256, 98], [((97, 97), 256)])
    'aab'
    """
    return Vocabulary(merges).decode(ids)


def count_tokens(texts: str | Iterable[str], merges: Sequence[Merge], sizes: Iterable[int], *,
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
    return Vocabulary(merges).count_tokens(texts, sizes)


__all__ = [
    "ENGINE",
    "ENGINES",
    "MAX_VOCAB_SIZE",
    "MIN_PAIR_COUNT",
    "Measurement",
    "Merge",
    "Pair",
    "Progress",
    "Training",
    "Vocabulary",
    "count_tokens",
    "decode",
    "encode",
    "reference",
    "train",
    "train_detailed",
]
