"""Exact BPE training without recounting: the engine behind `analyzer.bpe.train`.

It learns the same merges as `reference.train_many`, but instead of recounting every pair
after every merge it:

1. counts the byte pairs once (C-speed, via 16-bit views of the buffer);
2. keeps each pair's count up to date by editing it only around each replaced occurrence;
3. finds a pair's occurrences from a list of its positions, recorded when the pair first
   appears (byte pairs are found in the original buffer instead: merges never create them),
   and checks each entry lazily against the token array rather than deleting stale ones;
4. picks the best pair from a heap of plain ints with lazy invalidation.

One fact keeps this simple: a pair's occurrences all appear in one step, when the later of
its two tokens is created (or at the start, for byte pairs). After that its count and its
occurrences only shrink. So each new pair is pushed on the heap once, a pair that starts
below `min_pair_count` can be forgotten at once, and a stale heap entry always ranks too
high, never too low: on pop it is re-pushed with its current rank.

>>> train_detailed("aaabdaaabac", 300).merges
[((97, 97), 256), ((97, 98), 257), ((256, 257), 258)]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from heapq import heapify, heappop, heappush

from .packing import SEPARATOR, pack
from .reference import FIRST_NEW_ID, MIN_PAIR_COUNT, Merge, check_training_args
from .tokens import (
    GAP,
    byte_pair_counts,
    byte_pair_positions,
    is_rare,
    rare_byte_pair_positions,
    token_array,
)

MAX_VOCAB_SIZE = 1 << 24
"""The largest vocabulary the engine trains: ids fit in 24 bits, so a pair of ids and a
language index fit in one 64-bit key."""

Progress = Callable[[int, int], None]
"""Called as progress(merges_done, merges_wanted) after each merge."""


@dataclass(frozen=True)
class Training:
    """What one training learned, and what it saw along the way."""

    merges: list[Merge]
    counts: list[int]
    """The pair's count (overlaps included) when each merge was chosen."""
    applied: list[int]
    """How many occurrences each merge replaced (fewer than its count when runs overlap)."""
    n_bytes: int
    """Tokens before any merge: the UTF-8 bytes of all texts."""
    stop_reason: str
    """"vocab_size" when every merge asked for was learned, else "min_pair_count"."""

    def tokens_after(self, n_merges: int) -> int:
        """Tokens in the training texts after the first `n_merges` merges."""
        return self.n_bytes - sum(self.applied[:n_merges])


def train(
    texts: str | Iterable[str],
    vocab_size: int,
    *,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
) -> list[Merge]:
    """Learn merges on a text or several; exactly `reference.train_many`'s result.

    >>> train(["abab", "ab"], 300)
    [((97, 98), 256)]
    """
    return train_detailed(
        texts, vocab_size, min_pair_count=min_pair_count, tie_break=tie_break, progress=progress
    ).merges


def train_detailed(
    texts: str | Iterable[str],
    vocab_size: int,
    *,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
) -> Training:
    """`train`, returning counts, replacements and why training stopped as well."""
    check_training_args(vocab_size, min_pair_count, tie_break)
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(f"vocab_size {vocab_size} is above {MAX_VOCAB_SIZE:,}, the largest "
                         "vocabulary the engine trains")
    buffer = pack(texts).buffer
    return _Trainer(buffer, vocab_size, min_pair_count, tie_break == "first").run(progress)


class _Trainer:
    def __init__(self, buffer: bytes, vocab_size: int, min_count: int, first: bool):
        self.buffer = buffer
        self.n_merges = vocab_size - FIRST_NEW_ID
        self.min_count = min_count
        self.first = first
        self.bits = max(8, (vocab_size - 1).bit_length())
        self.key_bits = 2 * self.bits
        # In "first" mode the heap rank also holds the position of the first occurrence.
        self.rank_bits = self.key_bits + (len(buffer).bit_length() if first else 0)
        self.tok = token_array(buffer)
        self.lengths = [1] * FIRST_NEW_ID
        self.counts = self._byte_pair_counts()
        # Byte pairs have no recorded positions: a scan of the buffer finds the frequent
        # ones; the rare ones are indexed now, in one pass, like the pairs merges create.
        rare = [key for key, count in self.counts.items() if is_rare(count, buffer)]
        self.positions: dict[int, list[int]] = {
            left << self.bits | right: found
            for (left, right), found in rare_byte_pair_positions(
                buffer, [(key >> self.bits, key & 0xFF) for key in rare]).items()
        }
        self.heads: dict[int, int] = {}  # "first" mode: where the first valid occurrence is
        self.heap = [self._rank(key, count) for key, count in self.counts.items()]
        heapify(self.heap)

    def _byte_pair_counts(self) -> dict[int, int]:
        return {
            left << self.bits | right: count
            for (left, right), count in byte_pair_counts(self.buffer).items()
            if count >= self.min_count
        }

    def _rank(self, key: int, count: int) -> int:
        """One int that orders the heap: higher count first, then the tie-break."""
        rank = -count << self.rank_bits | key
        if self.first:
            rank |= self._first_position(key) << self.key_bits
        return rank

    def _first_position(self, key: int) -> int:
        """Position of the pair's first current occurrence (positions only ever move right)."""
        left, right = key >> self.bits, key & ((1 << self.bits) - 1)
        tok, head = self.tok, self.heads.get(key, 0)
        recorded = self.positions.get(key)
        if recorded is None:  # a frequent byte pair: search the buffer from the last hit
            for position in byte_pair_positions(self.buffer, left, right, head):
                if tok[position] == left and tok[position + 1] == right:
                    self.heads[key] = position
                    return position
        else:
            step = self.lengths[left]
            for index in range(head, len(recorded)):
                position = recorded[index]
                if tok[position] == left and tok[position + step] == right:
                    self.heads[key] = index
                    return position
        raise AssertionError(f"pair {key} has a count but no occurrence")

    def _pop_best(self) -> tuple[int, int] | None:
        """The best pair and its count, or None when no pair reaches min_count."""
        heap, counts = self.heap, self.counts
        while heap:
            rank = heappop(heap)
            key = rank & ((1 << self.key_bits) - 1)
            count = counts.get(key, 0)
            if count < self.min_count:  # it can never come back: forget it
                counts.pop(key, None)
                self.positions.pop(key, None)
                continue
            current = self._rank(key, count)
            if rank == current:
                return key, count
            heappush(heap, current)
        return None

    def run(self, progress: Progress | None) -> Training:
        merges: list[Merge] = []
        pair_counts: list[int] = []
        applied: list[int] = []
        stop_reason = "vocab_size"
        right_mask = (1 << self.bits) - 1
        while len(merges) < self.n_merges:
            best = self._pop_best()
            if best is None:
                stop_reason = "min_pair_count"
                break
            key, count = best
            left, right = key >> self.bits, key & right_mask
            new_id = FIRST_NEW_ID + len(merges)
            applied.append(self._merge(key, left, right, new_id))
            merges.append(((left, right), new_id))
            pair_counts.append(count)
            if progress is not None:
                progress(len(merges), self.n_merges)
        n_bytes = len(self.buffer) - self.buffer.count(SEPARATOR)
        return Training(merges, pair_counts, applied, n_bytes, stop_reason)

    def _merge(self, key: int, a: int, b: int, z: int) -> int:
        """Replace every current occurrence of (a, b) by z; return how many were replaced."""
        del self.counts[key]
        self.heads.pop(key, None)
        occurrences: Iterable[int] | None = self.positions.pop(key, None)
        if occurrences is None:
            occurrences = byte_pair_positions(self.buffer, a, b)
        tok, counts, bits = self.tok, self.counts, self.bits
        counts_get = counts.get
        la, lb = self.lengths[a], self.lengths[b]
        zkey = z << bits
        created: defaultdict[int, list[int]] = defaultdict(list)
        replaced = 0
        for i in occurrences:
            if tok[i] != a:
                continue
            j = i + la
            if tok[j] != b:
                continue
            k = j + lb
            tok[i] = z
            tok[j] = GAP
            tok[k - 1] = ~i
            replaced += 1
            x = tok[i - 1]
            if x != GAP:
                if x < 0:
                    start = ~x
                    x = tok[start]
                else:
                    start = i - 1
                if x == z:
                    # The previous replacement, just left of here, recorded (z, a) at its
                    # start; that a has now been merged away.
                    created[zkey | a].pop()
                else:
                    old = x << bits | a
                    count = counts_get(old)
                    if count is not None:
                        counts[old] = count - 1
                created[x << bits | z].append(start)
            y = tok[k]
            if y >= 0:
                old = b << bits | y
                count = counts_get(old)
                if count is not None:
                    counts[old] = count - 1
                created[zkey | y].append(i)
        self.lengths.append(la + lb)
        for new_key, recorded in created.items():
            if len(recorded) >= self.min_count:
                counts[new_key] = len(recorded)
                self.positions[new_key] = recorded
                heappush(self.heap, self._rank(new_key, len(recorded)))
        return replaced

