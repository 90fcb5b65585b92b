"""What every engine takes and returns: the checks on arguments, `Training`, `Measurement`.

Two engines implement the same contract: the compiled one (`analyzer.bpe.compiled`, a C
extension) and the pure-Python one (`analyzer.bpe.trainer` and `analyzer.bpe.vocabulary`).
Both give exactly what `analyzer.bpe.reference` gives.

>>> check_weights(["a", "b"], [1, 3])
[1, 3]
>>> check_weights(["a"], None) is None
True
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from .packing import Packed, as_text_list
from .pretokenize import Chunked, chunk_texts, resolve
from .reference import FIRST_NEW_ID, Merge, check_training_args

MAX_VOCAB_SIZE = 1 << 24
"""The largest vocabulary the engines train: ids fit in 24 bits, so a pair of ids and a
language index fit in one 64-bit key."""

MAX_WEIGHT = 2**32 - 1
"""The largest weight of one text."""

INTEGER_TYPECODES = "bBhHiIlLqQ"
"""The typecodes of `array`s that hold whole numbers only (checked by their range alone)."""

Progress = Callable[[int, int], None]
"""Called as progress(merges_done, merges_wanted): after each merge (pure engine) or after each
block of merges (compiled engine, so that it costs nothing), and once at the end."""


@dataclass(frozen=True)
class Training:
    """What one training learned, and what it saw along the way."""

    merges: list[Merge]
    counts: list[int]
    """The pair's count (overlaps included, weights applied) when each merge was chosen."""
    replaced: list[int]
    """How many occurrences each merge replaced (weights applied; fewer than its count when
    runs overlap)."""
    n_bytes: int
    """Tokens before any merge: the UTF-8 bytes of all texts (weights applied)."""
    stop_reason: str
    """"vocab_size" when every merge asked for was learned, else "min_pair_count"."""

    def tokens_after(self, n_merges: int) -> int:
        """Tokens in the training texts after the first `n_merges` merges."""
        return self.n_bytes - sum(self.replaced[:n_merges])


MAX_GROUPS = 1 << 16
"""Groups are numbered in 16 bits (the compiled engine keeps a record's group in 16 bits)."""


@dataclass(frozen=True)
class GroupedTraining(Training):
    chosen: list[int] = field(default_factory=list)
    """For each merge, the group whose pair it was (parity-aware), or -1 (all groups' counts)."""
    replaced_by_group: list[list[int]] = field(default_factory=list)
    """`[group][merge]`: occurrences each merge replaced in the group's texts (weights applied)."""


@dataclass(frozen=True)
class TokenStatistics:
    """Which tokens some texts use, at each size, and what each merge does to them."""

    histograms: dict[int, dict[int, int]]
    """`{size: {token id: occurrences}}`."""
    replaced: list[int]
    """Occurrences each merge replaces in the texts (so tokens at size 256 + k are the bytes
    minus the first k of these)."""


@dataclass(frozen=True)
class Measurement:
    counts: dict[int, list[int]]
    """`{size: [tokens of each text]}`."""
    roundtrip_ok: bool | None = None
    """Whether every text decoded back to itself (None when not checked)."""
    chunks: list[int] | None = None
    """With a pre-tokenizer: how many chunks each text was cut into."""


@dataclass(frozen=True)
class TokenIds:
    """Texts already in tokens, to train on from there (continued training): the ids a base
    vocabulary gave each text or chunk, all below `first_id`, the base's size, where the new
    ids start. Both engines' `train_detailed` and `train_grouped` take it in place of texts;
    the result is `reference.train_ids`'s.

    >>> TokenIds([[300, 7, 300, 7]], first_id=1000).first_id
    1000
    """

    sequences: Sequence[Sequence[int]]
    first_id: int


def check_token_ids(ids: TokenIds) -> list[list[int]]:
    """The sequences as lists, checked: `first_id` from 256 to MAX_VOCAB_SIZE, every id a whole
    number below it (ValueError naming the sequence and position otherwise)."""
    first_id = ids.first_id
    if isinstance(first_id, bool) or not isinstance(first_id, int) or \
            not FIRST_NEW_ID <= first_id <= MAX_VOCAB_SIZE:
        raise ValueError(f"first_id is {first_id!r}: a base has {FIRST_NEW_ID} to "
                         f"{MAX_VOCAB_SIZE:,} ids")
    sequences = [list(sequence) for sequence in ids.sequences]
    for index, sequence in enumerate(sequences):
        for position, token in enumerate(sequence):
            if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < first_id:
                raise ValueError(f"sequence {index}, position {position}: {token!r} is not an id "
                                 f"of the base (0 to {first_id - 1})")
    return sequences


def check_arguments(vocab_size: int, min_pair_count: int, tie_break: str,
                    first_id: int = FIRST_NEW_ID) -> None:
    """ValueError (or TypeError) for arguments no training can honour."""
    check_training_args(vocab_size, min_pair_count, tie_break, first_id)
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(f"vocab_size {vocab_size} is above {MAX_VOCAB_SIZE:,}, the largest "
                         "vocabulary the engine trains")


def check_weights(texts: Sequence[object], weights: Sequence[int] | None) -> list[int] | None:
    """The weights as a list aligned with the texts, checked; None when none were given.

    A text of weight w counts as w copies of itself, in place.
    """
    if weights is None:
        return None
    weights = list(weights)
    if len(weights) != len(texts):
        raise ValueError(f"{len(weights)} weights for {len(texts)} texts: give one per text")
    if not _whole_numbers_within(weights, 1, MAX_WEIGHT):
        for index, weight in enumerate(weights):
            if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= MAX_WEIGHT:
                raise ValueError(f"weight {index} is {weight!r}; weights are whole numbers from 1 "
                                 f"to {MAX_WEIGHT:,}")
    return weights


def _whole_numbers_within(values: Sequence[object], low: int, high: int) -> bool:
    """Whether every value is an int (not a bool) from low to high: a few passes in C, for
    the texts of a large corpus (the callers then look for the one that is not, to name it)."""
    if not (isinstance(values, array) and values.typecode in INTEGER_TYPECODES) \
            and set(map(type, values)) - {int}:
        return False
    numbers: Sequence[int] = values  # type: ignore[assignment]  # ints, just checked
    distinct = set(numbers)  # hashing ints is faster than comparing them; few are distinct
    return not distinct or (min(distinct) >= low and max(distinct) <= high)


GROUP_ORDER = "groups must be numbers from 0, in non-decreasing order"


def check_groups(texts: Sequence[object], groups: Sequence[int], weights: Sequence[int] | None,
                 multiplicities: Sequence[int] | None, check_order: bool = True) -> int:
    """The number of groups; ValueError unless each text has a group (in non-decreasing order:
    a group's texts together), and a weight and multiplicity from 0. `check_order=False`: the
    caller's engine checks the order itself (the compiled one does, in one pass in C, saying
    GROUP_ORDER)."""
    if len(groups) != len(texts):
        raise ValueError(f"{len(groups)} groups for {len(texts)} texts: give one per text")
    if (groups and groups[0] < 0) or (
            check_order and not all(map(operator.le, groups, islice(groups, 1, None)))):
        raise ValueError(GROUP_ORDER)
    n = (max(set(groups)) + 1) if groups else 0  # the set: see _whole_numbers_within
    if n > MAX_GROUPS:
        raise ValueError(f"{n} groups: at most {MAX_GROUPS:,}")
    for name, values in (("weight", weights), ("multiplicity", multiplicities)):
        if values is None:
            continue
        if len(values) != len(texts):
            raise ValueError(f"{len(values)} {name}s for {len(texts)} texts: give one per text")
        if _whole_numbers_within(values, 0, MAX_WEIGHT):
            continue
        for index, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WEIGHT:
                raise ValueError(f"{name} {index} is {value!r}: whole numbers from 0 to {MAX_WEIGHT:,}")
    return n


def expand_histogram(final: dict[int, int], pairs: Sequence[tuple[int, int]],
                     sizes: Iterable[int], first_id: int = FIRST_NEW_ID) -> TokenStatistics:
    """The histograms at `sizes` (a size beyond the merges is the final one) and each merge's
    replacements, from the histogram with every merge applied: undo the merges from the last,
    each turning its token's occurrences back into its pair's. Merge k creates `first_id + k`
    (256 + k over bytes; a base's size + k over a base's ids)."""
    full = first_id + len(pairs)
    wanted = {min(size, full) for size in sizes}
    histogram = dict(final)
    replaced = [0] * len(pairs)
    found: dict[int, dict[int, int]] = {}
    for token in range(full - 1, first_id - 1, -1):
        if token + 1 in wanted:
            found[token + 1] = dict(histogram)
        occurrences = histogram.pop(token, 0)
        if occurrences:
            left, right = pairs[token - first_id]
            histogram[left] = histogram.get(left, 0) + occurrences
            histogram[right] = histogram.get(right, 0) + occurrences
        replaced[token - first_id] = occurrences
    if first_id in wanted:
        found[first_id] = histogram
    return TokenStatistics({size: found[size] for size in sorted(wanted)}, replaced)


class BaseVocabulary:
    """What both engines' `Vocabulary` share: the checked merge list, the pre-tokenizer, and the
    operations made of the engine's own `_encode` and `_measure` (which see chunks only).

    Merges must be as `train` returns them: merge `r` creates id `256 + r` from two ids that
    already exist. Anything else is a ValueError naming the first bad merge. With a
    pre-tokenizer, a text is cut into chunks first and each chunk is encoded on its own.
    """

    def __init__(self, merges: Sequence[Merge], pretokenizer: str | None = None):
        self.merges = list(merges)
        self.pairs = [check_merge(rank, merge) for rank, merge in enumerate(self.merges)]
        self.pretokenizer = resolve(pretokenizer)
        self._chunk_ids: dict[str, list[int]] = {}

    @property
    def size(self) -> int:
        return FIRST_NEW_ID + len(self.merges)

    def _encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def _measure(self, texts: list[str], sizes: list[int], roundtrip: bool) -> Measurement:
        raise NotImplementedError

    def token_bytes(self, token: int) -> bytes:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        """The ids of `text`, as `reference.encode` gives them (chunk by chunk, with a
        pre-tokenizer; a chunk's ids are kept, for the next text that has it)."""
        if self.pretokenizer is None:
            return self._encode(text)
        ids: list[int] = []
        cache = self._chunk_ids
        for chunk in self.pretokenizer.split(text):
            found = cache.get(chunk)
            if found is None:
                found = self._encode(chunk)
                if len(cache) < CHUNK_CACHE:
                    cache[chunk] = found
            ids.extend(found)
        return ids

    def measure(self, texts: str | Iterable[str], sizes: Iterable[int], *,
                roundtrip: bool = False) -> Measurement:
        """Token counts of each text at every size, from one replay; with `roundtrip`, also
        whether every text's tokens at the largest size spell it again. With a pre-tokenizer,
        each distinct chunk is counted once and its counts added up per text."""
        ordered = self.checked_sizes(sizes)
        text_list = as_text_list(texts)
        if self.pretokenizer is None:
            return self._measure(text_list, ordered, roundtrip)
        chunked = chunk_texts(text_list, self.pretokenizer)
        measured = self._measure(chunked.chunks, ordered, roundtrip)
        counts = {size: self._sum_by_text(per_chunk, chunked)
                  for size, per_chunk in measured.counts.items()}
        offsets = chunked.offsets
        return Measurement(counts, measured.roundtrip_ok,
                           [offsets[k + 1] - offsets[k] for k in range(len(offsets) - 1)])

    def token_statistics(self, texts_by_group: Sequence[Sequence[str]],
                         sizes: Iterable[int]) -> list[TokenStatistics]:
        """For each group of texts (a language's measured units): its token histogram at each
        size and the occurrences each merge replaces, from one replay.

        A size's tokens are the final tokens with every later merge undone (merges after the
        size only join tokens the size already has), so the final histogram gives them all;
        and undoing merge k replaces its token's occurrences, which is what merge k replaced.

        >>> expand_histogram({257: 2, 98: 1}, [(97, 97), (256, 98)], [256, 258])
        TokenStatistics(histograms={256: {98: 3, 97: 4}, 258: {257: 2, 98: 1}}, replaced=[2, 2])
        """
        flat: list[str] = []
        starts = []
        for texts in texts_by_group:
            starts.append(len(flat))
            if self.pretokenizer is None:
                flat.extend(texts)
            else:  # each chunk where it occurs, a group's texts cut at once
                chunked = chunk_texts(list(texts), self.pretokenizer)
                chunks = chunked.chunks
                flat.extend([chunks[i] for i in chunked.ids])
        finals = self._histograms(flat, starts)
        return [expand_histogram(final, self.pairs, sizes) for final in finals]

    def _histograms(self, texts: list[str], group_starts: list[int]) -> list[dict[int, int]]:
        """Each group's token histogram with every merge applied (texts of group g start at
        `group_starts[g]`)."""
        raise NotImplementedError

    def _sum_by_text(self, per_chunk: list[int], chunked: Chunked) -> list[int]:
        """Each text's count: the sum of its chunks' (an engine may do it faster)."""
        return [sum(per_chunk[i] for i in ids) for ids in chunked.of_text]

    def decode(self, ids: Iterable[int]) -> str:
        """Text from ids; a cut multi-byte character becomes U+FFFD instead of raising."""
        return b"".join(map(self.token_bytes, ids)).decode("utf-8", errors="replace")

    def count_tokens(self, texts: str | Iterable[str], sizes: Iterable[int]) -> dict[int, list[int]]:
        """`{size: [tokens of each text]}` for every size, in one replay of the merges (each
        text counted once: weights are for training only)."""
        return self.measure(texts, sizes).counts

    def group_totals(self, groups: Mapping[str, Sequence[str]]) -> dict[str, tuple[int, int]]:
        """`{name: (UTF-8 bytes, tokens)}` of each group of texts at the full size, from one
        replay of all of them."""
        texts = [text for group in groups.values() for text in group]
        counts = self.count_tokens(texts, [self.size])[self.size]
        totals, offset = {}, 0
        for name, group in groups.items():
            n_bytes = sum(len(text.encode("utf-8")) for text in group)
            totals[name] = (n_bytes, sum(counts[offset:offset + len(group)]))
            offset += len(group)
        return totals

    def checked_sizes(self, sizes: Iterable[int]) -> list[int]:
        """The sizes, ascending and unique; ValueError for one this merge list does not have."""
        ordered = sorted(set(sizes))
        for size in ordered:
            if isinstance(size, bool) or not isinstance(size, int) \
                    or not FIRST_NEW_ID <= size <= self.size:
                raise ValueError(f"size {size!r} is outside {FIRST_NEW_ID}..{self.size}, "
                                 f"the sizes this merge list has")
        return ordered

    def check_id(self, token: int) -> None:
        """ValueError for an id this vocabulary lacks."""
        if not isinstance(token, int) or not 0 <= token < self.size:
            raise ValueError(f"unknown token id {token!r}: neither a byte nor a learned id")


CHUNK_CACHE = 1 << 20
"""At most this many chunks' ids are kept by a vocabulary (for encoding text after text)."""


def check_merge(rank: int, merge: Merge) -> tuple[int, int]:
    """(left, right) of merge `rank`, or ValueError if it is not one `train` could return."""
    try:
        (left, right), new_id = merge
    except (TypeError, ValueError):
        raise ValueError(f"merge {rank} is {merge!r}, not ((left, right), new_id)") from None
    expected = FIRST_NEW_ID + rank
    if new_id != expected:
        raise ValueError(f"merge {rank} creates id {new_id!r}; merges must create {expected}")
    for part in (left, right):
        if isinstance(part, bool) or not isinstance(part, int) or not 0 <= part < expected:
            raise ValueError(f"merge {rank} uses id {part!r}, which does not exist before it")
    return left, right


class Engine(Protocol):
    """What an engine is: the compiled one (`analyzer.bpe.compiled`) and the pure-Python one
    (`analyzer.bpe.pure`) both are, and give the same results for the same calls. (The
    compiled engine's functions also take `floor`, the count floor it starts from, which tests
    set high so that its recounts are exercised: the pure engine keeps every pair.)"""

    @property
    def Vocabulary(self) -> type[BaseVocabulary]: ...  # noqa: N802 - the engines' class

    def train_detailed(self, texts: str | Iterable[str] | TokenIds, vocab_size: int, *,
                       weights: Sequence[int] | None = None, min_pair_count: int = ...,
                       tie_break: str = "lexicographic",
                       progress: Progress | None = None) -> Training: ...

    def train_grouped(self, texts: Sequence[str] | TokenIds | Packed, groups: Sequence[int],
                      vocab_size: int, *,
                      weights: Sequence[int] | None = None,
                      multiplicities: Sequence[int] | None = None, parity: bool = False,
                      global_merges: int = 0, min_pair_count: int = ...,
                      tie_break: str = "lexicographic",
                      progress: Progress | None = None) -> GroupedTraining: ...
