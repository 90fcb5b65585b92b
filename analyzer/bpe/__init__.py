"""Byte-level BPE: the exact, fast engine the analyzer runs, beside its literal reference.

Public API (what the rest of the analyzer uses):

- `train(texts, vocab_size, *, min_pair_count=2, tie_break="lexicographic", progress=None)`
- `train_detailed(...)`: the same, returning a `Training` with counts and the stop reason
- `encode(text, merges)`, `decode(ids, merges)`
- `count_tokens(texts, merges, sizes)`: `{size: [tokens of each text]}` in one replay
- `Vocabulary(merges)`: the same operations with the merge list prepared once, and
  `measure(texts, sizes, roundtrip=True)`: counts plus a decode check, in one replay

`analyzer.bpe.reference` is the slow, literal definition every result here must equal.

>>> merges = train(["low lower lowest"] * 2, 260)
>>> decode(encode("lowest", merges), merges)
'lowest'
"""

from . import reference
from .reference import MIN_PAIR_COUNT, Merge, Pair
from .trainer import MAX_VOCAB_SIZE, Progress, Training, train, train_detailed
from .vocabulary import Measurement, Vocabulary, count_tokens, decode, encode

__all__ = [
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
