"""Exact BPE training without recounting, in pure Python: the fallback engine, and a second
oracle for the compiled one (`analyzer/bpe/engine/train.c` follows the same algorithm).

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

Training over texts in groups (languages) is the same loop with a `Groups` riding along: it
counts how many occurrences each merge replaced in each group, and for parity-aware training
(Foroutan et al. 2025: each merge is the most frequent pair of the group that compresses worst)
it keeps each pair's count within each group and a heap per group, with the same lazy
invalidation. Texts of weight 0 are measured only: their pairs count for nothing, but merges
apply to them, so a parity-aware training can follow the token counts of held-out texts.

>>> train_detailed("aaabdaaabac", 300).merges
[((97, 97), 256), ((97, 98), 257), ((256, 257), 258)]
>>> result = train_grouped(["aaaaaaaa", "bcdbcdbcd"], [0, 1], 258, parity=True)
>>> result.merges, result.chosen
([((98, 99), 256), ((97, 97), 257)], [1, 0])
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heappush

from .contract import (
    GroupedTraining,
    Progress,
    TokenIds,
    Training,
    check_arguments,
    check_groups,
    check_token_ids,
    check_weights,
)
from .packing import SEPARATOR, Packed, as_text_list, pack, pack_ids
from .reference import FIRST_NEW_ID, MIN_PAIR_COUNT, Merge
from .tokens import (
    GAP,
    byte_pair_counts,
    byte_pair_positions,
    is_rare,
    rare_byte_pair_positions,
    replace_pair,
    token_array,
)


def train_detailed(
    texts: str | Iterable[str] | TokenIds,
    vocab_size: int,
    *,
    weights: Sequence[int] | None = None,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
) -> Training:
    """Learn merges on a text or several (a text of weight w counts as w copies of itself, in
    place); exactly `reference.train_many`'s result, with counts and the stop reason. Given
    `TokenIds` (texts already in a base's tokens), exactly `reference.train_ids`'s.

    >>> train_detailed(["abab", "ab"], 300).merges
    [((97, 98), 256)]
    >>> train_detailed(["ab", "cd"], 300, weights=[1, 3]).merges
    [((99, 100), 256)]
    >>> train_detailed(TokenIds([[300, 7, 300, 7]], 1000), 1002).merges
    [((300, 7), 1000)]
    """
    layout = _lay_out(texts)
    check_arguments(vocab_size, min_pair_count, tie_break, layout.first_id)
    weight_list = check_weights(layout.starts, weights)
    weight = None
    if weight_list is not None and any(w != 1 for w in weight_list):
        weight = array("I", bytes(4 * len(layout.tok)))
        for start, end, w in zip(layout.starts, layout.ends, weight_list):
            weight[start - 1:end] = array("I", [w]) * (end - start + 1)
    trainer = Trainer(layout, vocab_size, min_pair_count, tie_break == "first", weight)
    return trainer.run(progress)


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
) -> GroupedTraining:
    """Learn merges on texts in groups (`groups[i]`: text i's group; a group's texts together).

    Not parity-aware, this is `train_detailed` on the texts with each merge's replacements
    counted per group. Parity-aware, each merge is the most frequent pair (within its own texts)
    of the group with the most tokens: texts count `multiplicities[i]` times in their group's
    token count (default: once each), and `weights[i]` times in pair counts (default: once; 0
    for a text that is measured, not trained on). The first `global_merges` merges are chosen
    over all groups together.
    """
    layout = _lay_out(texts)
    check_arguments(vocab_size, min_pair_count, tie_break, layout.first_id)
    n = check_groups(layout.starts, groups, weights, multiplicities)
    size = len(layout.tok)
    of = array("H", bytes(2 * size))
    weight = array("I", [1]) * size if weights is not None else None
    multiplicity = array("I", bytes(4 * size))
    tokens = [0] * n
    for index, (start, end) in enumerate(zip(layout.starts, layout.ends)):
        group = groups[index]
        of[start - 1:end] = array("H", [group]) * (end - start + 1)
        m = 1 if multiplicities is None else multiplicities[index]
        multiplicity[start:end] = array("I", [m]) * (end - start)
        tokens[group] += m * (end - start)
        if weight is not None and weights is not None:
            weight[start - 1:end] = array("I", [weights[index]]) * (end - start + 1)
    state = Groups(of, n, multiplicity, tokens, parity, global_merges)
    trainer = Trainer(layout, vocab_size, min_pair_count, tie_break == "first", weight, state)
    training = trainer.run(progress)
    replaced_by_group = [replaced[:len(training.merges)] for replaced in state.replaced]
    chosen = state.chosen[:len(training.merges)]
    return GroupedTraining(training.merges, training.counts, training.replaced, training.n_bytes,
                           training.stop_reason, chosen, replaced_by_group)


@dataclass(frozen=True)
class Layout:
    """What a training starts from: one token per slot, GAP between texts."""

    tok: list[int]
    starts: list[int]
    ends: list[int]
    first_id: int
    """The first new id: 256, or a base vocabulary's size."""
    buffer: bytes | None
    """The packed bytes, when training starts from bytes: byte pairs are then counted and
    found there at C speed."""


def _lay_out(texts: str | Iterable[str] | TokenIds | Packed) -> Layout:
    if isinstance(texts, TokenIds):
        packed_ids = pack_ids(check_token_ids(texts))
        return Layout(packed_ids.tok, packed_ids.starts, packed_ids.ends(), texts.first_id, None)
    packed = texts if isinstance(texts, Packed) else pack(as_text_list(texts))
    return Layout(token_array(packed.buffer), list(packed.starts), packed.ends(), FIRST_NEW_ID,
                  packed.buffer)


class Trainer:
    """One training's state: the token array, each pair's count, positions and heap."""

    def __init__(self, layout: Layout, vocab_size: int, min_count: int, first: bool,
                 weight: array | None = None, groups: Groups | None = None):
        self.buffer = layout.buffer
        self.first_id = layout.first_id
        self.weight = weight
        """The weight of the text each position belongs to (None: every text weighs 1)."""
        self.groups = groups
        self.n_merges = vocab_size - self.first_id
        self.min_count = min_count
        self.first = first
        self.bits = max(8, (vocab_size - 1).bit_length())
        self.key_bits = 2 * self.bits
        # In "first" mode the heap rank also holds the position of the first occurrence.
        self.rank_bits = self.key_bits + (len(layout.tok).bit_length() if first else 0)
        self.tok = layout.tok
        self.n_start = self._tokens_at_start()
        self.lengths = [1] * self.first_id
        self.heads: dict[int, int] = {}  # "first" mode: where the first valid occurrence is
        if self.buffer is None:
            self.counts, self.positions = self._pair_counts_and_positions()
        else:
            self.counts = self._byte_pair_counts()
            # Byte pairs have no recorded positions: a scan of the buffer finds the frequent
            # ones; the rare ones are indexed now, in one pass, like the pairs merges create.
            buffer = self.buffer
            rare = [key for key, count in self.counts.items() if is_rare(count, buffer)]
            self.positions = {
                left << self.bits | right: found
                for (left, right), found in rare_byte_pair_positions(
                    buffer, [(key >> self.bits, key & 0xFF) for key in rare]).items()
            }
        self.heap = [self.rank(key, count) for key, count in self.counts.items()]
        heapify(self.heap)
        if groups is not None:
            groups.start(self)

    def _tokens_at_start(self) -> int:
        """Tokens before any merge (weights applied): bytes, or the base's ids."""
        if self.buffer is not None and self.weight is None:
            return len(self.buffer) - self.buffer.count(SEPARATOR)
        if self.weight is None:
            return len(self.tok) - self.tok.count(GAP)
        return sum(w for token, w in zip(self.tok, self.weight) if token != GAP)

    def _pair_counts_and_positions(self) -> tuple[dict[int, int], dict[int, list[int]]]:
        """Every adjacent pair of the starting tokens (ids, one slot each) with its count and
        positions, those reaching min_count kept."""
        tok, weight, bits = self.tok, self.weight, self.bits
        positions: defaultdict[int, list[int]] = defaultdict(list)
        for i in range(len(tok) - 1):
            left, right = tok[i], tok[i + 1]
            if left != GAP and right != GAP:
                positions[left << bits | right].append(i)
        counts = {key: len(found) if weight is None else sum(weight[p] for p in found)
                  for key, found in positions.items()}
        kept = {key: count for key, count in counts.items() if count >= self.min_count}
        return kept, {key: positions[key] for key in kept}

    def _byte_pair_counts(self) -> dict[int, int]:
        assert self.buffer is not None
        counts = (byte_pair_counts(self.buffer) if self.weight is None
                  else byte_pair_counts_by_group(self.buffer, self.weight)[0])
        return {
            left << self.bits | right: count
            for (left, right), count in counts.items()
            if count >= self.min_count
        }

    def rank(self, key: int, count: int, group: int = -1) -> int:
        """One int that orders a heap: higher count first, then the tie-break ("first": the
        first occurrence, in the group's texts when a group is given)."""
        rank = -count << self.rank_bits | key
        if self.first:
            rank |= self._first_position(key, group) << self.key_bits
        return rank

    def _first_position(self, key: int, group: int = -1) -> int:
        """Position of the pair's first current occurrence, in a group's texts or in all
        (positions only ever move right, so the search resumes where the last one ended)."""
        left, right = key >> self.bits, key & ((1 << self.bits) - 1)
        of = self.groups.of if group >= 0 and self.groups is not None else None
        head_key = key if of is None else ~(group << self.key_bits | key)
        tok, head, weight = self.tok, self.heads.get(head_key, 0), self.weight  # weight 0: measured only
        recorded = self.positions.get(key)
        if recorded is None:  # a frequent byte pair: search the buffer from the last hit
            assert self.buffer is not None  # from ids, every pair's positions are recorded
            for position in byte_pair_positions(self.buffer, left, right, head):
                if tok[position] == left and tok[position + 1] == right and \
                        (of is None or of[position] == group) and (weight is None or weight[position]):
                    self.heads[head_key] = position
                    return position
        else:
            step = self.lengths[left]
            for index in range(head, len(recorded)):
                position = recorded[index]
                if tok[position] == left and tok[position + step] == right and \
                        (of is None or of[position] == group) and (weight is None or weight[position]):
                    self.heads[head_key] = index
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
            current = self.rank(key, count)
            if rank == current:
                return key, count
            heappush(heap, current)
        return None

    def run(self, progress: Progress | None) -> Training:
        merges: list[Merge] = []
        pair_counts: list[int] = []
        replaced: list[int] = []
        stop_reason = "vocab_size"
        right_mask = (1 << self.bits) - 1
        groups = self.groups
        while len(merges) < self.n_merges:
            if groups is not None and groups.parity and len(merges) >= groups.global_merges:
                best = groups.pop_best(self)
            else:
                best = self._pop_best()
                if groups is not None:
                    groups.chosen.append(-1)
            if best is None:
                stop_reason = "min_pair_count"
                break
            key, count = best
            left, right = key >> self.bits, key & right_mask
            new_id = self.first_id + len(merges)
            replaced.append(self._merge(key, left, right, new_id))
            merges.append(((left, right), new_id))
            pair_counts.append(count)
            if progress is not None:
                progress(len(merges), self.n_merges)
        n_bytes = self.n_start
        return Training(merges, pair_counts, replaced, n_bytes, stop_reason)

    def _merge(self, key: int, a: int, b: int, z: int) -> int:
        """Replace every current occurrence of (a, b) by z; return how many were replaced."""
        del self.counts[key]
        self.heads.pop(key, None)
        occurrences: Iterable[int] | None = self.positions.pop(key, None)
        if occurrences is None:
            assert self.buffer is not None  # from ids, every pair's positions are recorded
            occurrences = byte_pair_positions(self.buffer, a, b)
        tok, counts, bits, weight = self.tok, self.counts, self.bits, self.weight
        counts_get = counts.get
        groups = self.groups
        parity = groups is not None and groups.parity  # per-language counts are kept
        if groups is not None:
            of, group_counts, key_bits = groups.of, groups.counts, self.key_bits
            mult, tokens = groups.multiplicity, groups.tokens
            replaced_in = [0] * groups.n
        la, lb = self.lengths[a], self.lengths[b]
        zkey = z << bits
        created: defaultdict[int, list[int]] = defaultdict(list)
        replaced = 0
        for i, x, start, y in replace_pair(tok, occurrences, a, la, b, lb, z):
            w = 1 if weight is None else weight[i]
            replaced += w
            if groups is not None:
                g = of[i]
                replaced_in[g] += w
                tokens[g] -= mult[i]
                gbits = g << key_bits
            if x != GAP:
                if x == z:
                    # The previous replacement, just left of here, recorded (z, a) at its
                    # start; that a has now been merged away.
                    created[zkey | a].pop()
                else:
                    old = x << bits | a
                    count = counts_get(old)
                    if count is not None:
                        counts[old] = count - w
                        if parity:
                            group_counts[gbits | old] -= w
                created[x << bits | z].append(start)
            if y >= 0:
                old = b << bits | y
                count = counts_get(old)
                if count is not None:
                    counts[old] = count - w
                    if parity:
                        group_counts[gbits | old] -= w
                created[zkey | y].append(i)
        self.lengths.append(la + lb)
        for new_key, recorded in created.items():
            total = len(recorded) if weight is None else sum(weight[p] for p in recorded)
            if total >= self.min_count:
                counts[new_key] = total
                self.positions[new_key] = recorded
                if groups is None or not parity or groups.global_phase:
                    heappush(self.heap, self.rank(new_key, total))
                if groups is not None and parity:
                    groups.created(self, new_key, recorded)
        if groups is not None:
            groups.merged(replaced_in)
        return replaced


class Groups:
    """What a training over groups keeps beside the trainer's own state:

    - each position's group (`of`), and each text's multiplicity in the token count of its
      group (`multiplicity`: 0 for a text that is trained on but not measured, the chunk's
      count for a measured one) and so each group's current token count (`tokens`);
    - for parity-aware training, each pair's count within each group (`counts`, keyed by the
      group and the pair) and a heap per group.
    """

    def __init__(self, of: array, n: int, multiplicity: array, tokens: list[int], parity: bool,
                 global_merges: int):
        self.of = of
        self.n = n
        self.multiplicity = multiplicity
        self.tokens = tokens
        """Each group's current token count (multiplicities applied)."""
        self.parity = parity
        self.global_merges = global_merges
        self.counts: dict[int, int] = {}
        self.heaps: list[list[int]] = [[] for _ in range(n)]
        self.chosen: list[int] = []
        self.replaced: list[list[int]] = [[] for _ in range(n)]

    @property
    def global_phase(self) -> bool:
        """Whether the merge being made (or the next one) is chosen over all groups."""
        return len(self.chosen) < self.global_merges

    def start(self, trainer: Trainer) -> None:
        """Per-group counts of the pairs the trainer starts with, and the groups' heaps."""
        if not self.parity:
            return
        if trainer.buffer is None:  # from ids: every kept pair's positions are at hand
            for key, positions in trainer.positions.items():
                self.created(trainer, key, positions)
            return
        bits = trainer.key_bits
        for group, counts in enumerate(byte_pair_counts_by_group(trainer.buffer, trainer.weight,
                                                                 self.of, self.n)):
            for (left, right), count in counts.items():
                key = left << trainer.bits | right
                if key in trainer.counts:
                    self.counts[group << bits | key] = count
                    if count >= trainer.min_count:
                        heappush(self.heaps[group], trainer.rank(key, count, group))

    def created(self, trainer: Trainer, key: int, positions: list[int]) -> None:
        """A pair a merge made, kept by the trainer: its count in each group."""
        weight, of = trainer.weight, self.of
        totals: Counter[int] = Counter()
        for position in positions:
            totals[of[position]] += 1 if weight is None else weight[position]
        for group, total in totals.items():
            self.counts[group << trainer.key_bits | key] = total
            if total >= trainer.min_count:
                heappush(self.heaps[group], trainer.rank(key, total, group))

    def merged(self, replaced: list[int]) -> None:
        """A merge was made: how many occurrences it replaced in each group."""
        for group, count in enumerate(replaced):
            self.replaced[group].append(count)

    def pop_best(self, trainer: Trainer) -> tuple[int, int] | None:
        """The pair of the group with the most tokens (ties: the lower group) that has one
        reaching min_count, and its count there; None when no group has one."""
        for group in sorted(range(self.n), key=lambda g: (-self.tokens[g], g)):
            best = self._pop(trainer, group)
            if best is not None:
                self.chosen.append(group)
                return best
        return None

    def _pop(self, trainer: Trainer, group: int) -> tuple[int, int] | None:
        heap, counts = self.heaps[group], self.counts
        bits = trainer.key_bits
        mask = (1 << bits) - 1
        while heap:
            rank = heappop(heap)
            key = rank & mask
            if key not in trainer.counts:  # merged already, or under min_count everywhere
                continue
            count = counts.get(group << bits | key, 0)
            if count < trainer.min_count:  # counts only fall: it cannot come back here
                continue
            current = trainer.rank(key, count, group)
            if rank == current:
                return key, count
            heappush(heap, current)
        return None


def byte_pair_counts_by_group(buffer: bytes, weight: array | None, of: array | None = None,
                              n: int = 1) -> list[Counter[tuple[int, int]]]:
    """Each group's byte pair counts (weights applied; every text in group 0 without `of`),
    counted at C speed on the texts of each group and weight joined.

    >>> byte_pair_counts_by_group(b"\\xffab\\xffab\\xff", array("I", [2, 2, 2, 2, 1, 1, 1]))
    [Counter({(97, 98): 3})]
    """
    by_group_weight: dict[tuple[int, int], list[bytes]] = {}
    start = 1
    while start < len(buffer):
        end = buffer.index(SEPARATOR, start)
        w = 1 if weight is None else weight[start]
        group = 0 if of is None else of[start - 1]
        by_group_weight.setdefault((group, w), []).append(buffer[start:end])
        start = end + 1
    result: list[Counter[tuple[int, int]]] = [Counter() for _ in range(n)]
    separator = bytes([SEPARATOR])
    for (group, w), texts in by_group_weight.items():
        for pair, count in byte_pair_counts(separator.join(texts)).items():
            result[group][pair] += count * w
    return result
