"""The compiled engine (the C extension `analyzer.bpe._engine`) behind the contract that both
engines share: `train_detailed` and `Vocabulary`, exactly as the pure engine and the reference.

Importing this module fails with ImportError when the extension was not built; the package
then runs on the pure engine (see `analyzer.bpe.engines`).
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from . import _engine
from .contract import (
    BaseVocabulary,
    GroupedTraining,
    Measurement,
    Progress,
    TokenIds,
    Training,
    check_arguments,
    check_groups,
    check_token_ids,
    check_weights,
)
from .packing import Packed, as_text_list, pack, pack_ids
from .pretokenize import Chunked
from .reference import FIRST_NEW_ID, MIN_PAIR_COUNT, Merge
from .threads import default_threads, shares

PROGRESS_EVERY = 64
"""Merges between two calls of the progress callback (and two looks at Ctrl-C): the loop runs
without the GIL in between."""


def train_detailed(
    texts: str | Iterable[str] | TokenIds,
    vocab_size: int,
    *,
    weights: Sequence[int] | None = None,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
    floor: int = 0,
) -> Training:
    """Learn merges on a text or several (a text of weight w counts as w copies of itself, in
    place); exactly `reference.train_many`'s result, with counts and the stop reason (from
    `TokenIds`: `reference.train_ids`'s).

    `floor`: the count floor to start from (0: chosen from the text's size); tests set it high
    on small texts so that the recounts it causes are exercised.

    >>> train_detailed(["ab", "cd"], 300, weights=[1, 3]).merges
    [((99, 100), 256)]
    >>> train_detailed(TokenIds([[300, 7, 300, 7]], 1000), 1002).merges
    [((300, 7), 1000)]
    """
    start = _start(texts)
    check_arguments(vocab_size, min_pair_count, tie_break, start.first_id)
    weight_list = check_weights(start.starts, weights)
    heavy = weight_list is not None and any(weight != 1 for weight in weight_list)
    weight_array = array("q", weight_list) if weight_list is not None and heavy else None
    result = _engine.train(
        start.buffer, start.starts, weight_array, vocab_size, min_pair_count,
        tie_break == "first", progress, PROGRESS_EVERY, floor=floor, ids=start.ids,
        first_id=start.first_id)
    merges, pair_counts, replaced = _merges(result, start.first_id)
    return Training(merges, pair_counts, replaced, result.n_tokens,
                    result.stop_reason)


def train_grouped(
    texts: Sequence[str] | TokenIds | Packed,
    groups: Sequence[int],
    vocab_size: int,
    *,
    weights: Sequence[int] | None = None,
    multiplicities: Sequence[int] | None = None,
    parity: bool = False,
    global_merges: int = 0,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
    floor: int = 0,
) -> GroupedTraining:
    """Learn merges on texts in groups, exactly as the pure engine's `train_grouped` (see
    `analyzer.bpe.trainer`): replacements per group and, `parity`, parity-aware training.

    >>> train_grouped(["aaaaaaaa", "bcdbcdbcd"], [0, 1], 258, parity=True).chosen
    [1, 0]
    """
    start = _start(texts)
    check_arguments(vocab_size, min_pair_count, tie_break, start.first_id)
    n_groups = check_groups(start.starts, groups, weights, multiplicities, check_order=False)
    result = _engine.train(
        start.buffer, start.starts, _int64s(weights), vocab_size, min_pair_count,
        tie_break == "first", progress, PROGRESS_EVERY, groups=_int64s(groups),
        multiplicities=_int64s(multiplicities),
        parity=parity, global_merges=global_merges, floor=floor, ids=start.ids,
        first_id=start.first_id)
    merges, pair_counts, replaced = _merges(result, start.first_id)
    assert result.chosen is not None and result.replaced_by_group is not None  # groups were given
    chosen, by_group = array("i"), array("q")
    chosen.frombytes(result.chosen)
    by_group.frombytes(result.replaced_by_group)
    replaced_by_group = [by_group[g::n_groups].tolist() for g in range(n_groups)]  # merge-major
    return GroupedTraining(merges, pair_counts, replaced, result.n_tokens, result.stop_reason,
                           chosen.tolist(), replaced_by_group)


def _int64s(values: Sequence[int] | None) -> array | None:
    """Values as the engine reads them, an int64 array: as they are when they are one (a
    copy of one per chunk would cost 8 bytes a chunk while training runs)."""
    if values is None or (isinstance(values, array) and values.typecode == "q"):
        return values
    return array("q", values)


@dataclass(frozen=True)
class _Start:
    """What the engine trains from: packed bytes, or (`ids`) int32 ids, GAP between texts."""

    buffer: bytes | array
    starts: array
    """Each text's first position (int64)."""
    ids: bool
    first_id: int


def _start(texts: str | Iterable[str] | TokenIds | Packed) -> _Start:
    if isinstance(texts, TokenIds):
        packed_ids = pack_ids(check_token_ids(texts))
        return _Start(array("i", packed_ids.tok), array("q", packed_ids.starts), True, texts.first_id)
    if isinstance(texts, Packed):  # laid out already (a training source's chunk tables)
        starts = texts.starts if isinstance(texts.starts, array) and texts.starts.typecode == "q" \
            else array("q", texts.starts)
        return _Start(texts.buffer, starts, False, FIRST_NEW_ID)
    # packing.pack's layout, built in C (hundreds of thousands of chunks, with a pre-tokenizer)
    buffer, starts_bytes = _engine.pack(as_text_list(texts))
    starts = array("q")
    starts.frombytes(starts_bytes)
    return _Start(buffer, starts, False, FIRST_NEW_ID)


def _merges(result: _engine.TrainResult, first_id: int) -> tuple[list[Merge], list[int], list[int]]:
    """The merge list, pair counts and replacements from the engine's packed arrays."""
    left_ids, right_ids, pair_counts, replaced = (array("i"), array("i"), array("q"), array("q"))
    left_ids.frombytes(result.lefts)
    right_ids.frombytes(result.rights)
    pair_counts.frombytes(result.counts)
    replaced.frombytes(result.replaced)
    # Tens of thousands of tuples, all kept: with the collector on, allocating them sets off
    # collections that go through everything alive (a corpus's texts, its chunks) and find
    # nothing to free.
    collecting = gc.isenabled()
    gc.disable()
    try:
        merges = [((left, right), first_id + rank)
                  for rank, (left, right) in enumerate(zip(left_ids, right_ids))]
    finally:
        if collecting:
            gc.enable()
    return merges, pair_counts.tolist(), replaced.tolist()


class Vocabulary(BaseVocabulary):
    """A merge list made ready for encoding, decoding and counting, in compiled code."""

    def __init__(self, merges: Sequence[Merge], pretokenizer: str | None = None):
        super().__init__(merges, pretokenizer)
        self._replayer = _engine.Replayer(array("i", [left for left, _ in self.pairs]).tobytes(),
                                          array("i", [right for _, right in self.pairs]).tobytes())

    def token_bytes(self, token: int) -> bytes:
        """The bytes an id stands for; a ValueError for an id this vocabulary lacks."""
        self.check_id(token)
        return self._replayer.piece(token)

    def _histograms(self, texts: list[str], group_starts: list[int]) -> list[dict[int, int]]:
        found = self._replayer.count_texts(texts, array("q"), array("q", group_starts),
                                           histograms=True)
        assert found.histograms is not None  # asked for
        counts = array("q")
        counts.frombytes(found.histograms)
        n_ids = self.size
        return [{token: n for token, n in enumerate(counts[g * n_ids:(g + 1) * n_ids]) if n}
                for g in range(len(group_starts))]

    def _sum_by_text(self, per_chunk: list[int], chunked: Chunked) -> list[int]:
        totals = array("I")
        totals.frombytes(_engine.sum_by_text(array("I", per_chunk).tobytes(),
                                             chunked.ids.tobytes(), chunked.offsets.tobytes()))
        return totals.tolist()

    def _encode(self, text: str) -> list[int]:
        ids = array("i")
        ids.frombytes(self._replayer.encode(pack([text]).buffer))
        return ids.tolist()

    def decode(self, ids: Iterable[int]) -> str:
        """Text from ids; a cut multi-byte character becomes U+FFFD instead of raising."""
        ids = list(ids)
        for token in ids:
            self.check_id(token)
        return self._replayer.decode_bytes(ids).decode("utf-8", errors="replace")

    def _measure(self, texts: list[str], sizes: list[int], roundtrip: bool) -> Measurement:
        ordered = sizes
        if not ordered and not roundtrip:
            return Measurement({})
        ranks = array("q", [size - FIRST_NEW_ID for size in ordered] or [len(self.merges)])
        parts = shares(texts, default_threads(texts))
        if len(parts) > 1:
            # One replay per share of the texts, each on its own thread (the replay gives up
            # the GIL; the merge list is only read): counts are per text, so they join.
            with ThreadPoolExecutor(len(parts)) as pool:
                found = list(pool.map(lambda part: self._replayer.count_texts(
                    texts[part[0]:part[1]], ranks, roundtrip=roundtrip), parts))
        else:
            found = [self._replayer.count_texts(texts, ranks, roundtrip=roundtrip)]
        counts = {}
        for index, size in enumerate(ordered):
            per_text = array("I")
            for part in found:
                per_text.frombytes(part.snapshots[index])
            counts[size] = per_text.tolist()
        return Measurement(counts, all(part.roundtrip for part in found) if roundtrip else None)
