"""Training over texts in groups (languages), in pure Python: how many occurrences each merge
replaced in each group, and parity-aware training (Foroutan et al. 2025), where each merge is
the most frequent pair of the group that compresses worst. The compiled engine follows the same
algorithm (`_engine.c`); both equal `reference.train_parity` (and `reference.train_many`, when
not parity-aware).

The trainer (`analyzer.bpe.trainer`) does the work; a `Groups` rides along. It keeps:

- each position's group (`of`), and each text's multiplicity in the token count of its group
  (`multiplicity`: 0 for a text that is trained on but not measured, the chunk's count for a
  measured one) and so each group's current token count (`tokens`);
- for parity-aware training, each pair's count within each group (`counts`, keyed by the group
  and the pair) and a heap per group, with the same lazy invalidation as the trainer's own.

Texts of weight 0 are measured only: their pairs count for nothing, but merges apply to them,
so a parity-aware training can follow the token counts of held-out texts.

>>> result = train_grouped(["aaaaaaaa", "bcdbcdbcd"], [0, 1], 258, parity=True)
>>> result.merges, result.chosen
([((98, 99), 256), ((97, 97), 257)], [1, 0])
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from heapq import heappop, heappush

from .contract import GroupedTraining, Progress, check_arguments, check_groups
from .packing import SEPARATOR, as_text_list, pack
from .reference import MIN_PAIR_COUNT
from .tokens import byte_pair_counts
from .trainer import _Trainer


class Groups:
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
        self.applied: list[list[int]] = [[] for _ in range(n)]

    @property
    def global_phase(self) -> bool:
        """Whether the merge being made (or the next one) is chosen over all groups."""
        return len(self.chosen) < self.global_merges

    def start(self, trainer: _Trainer) -> None:
        """Per-group counts of the byte pairs the trainer keeps, and the groups' heaps."""
        if not self.parity:
            return
        bits = trainer.key_bits
        for group, counts in enumerate(_group_byte_pair_counts(trainer.buffer, self.of,
                                                               trainer.weight, self.n)):
            for (left, right), count in counts.items():
                key = left << trainer.bits | right
                if key in trainer.counts:
                    self.counts[group << bits | key] = count
                    if count >= trainer.min_count:
                        heappush(self.heaps[group], trainer._rank(key, count, group))

    def created(self, trainer: _Trainer, key: int, positions: list[int]) -> None:
        """A pair a merge made, kept by the trainer: its count in each group."""
        weight, of = trainer.weight, self.of
        totals: Counter[int] = Counter()
        for position in positions:
            totals[of[position]] += 1 if weight is None else weight[position]
        for group, total in totals.items():
            self.counts[group << trainer.key_bits | key] = total
            if total >= trainer.min_count:
                heappush(self.heaps[group], trainer._rank(key, total, group))

    def merged(self, applied: list[int]) -> None:
        for group, replaced in enumerate(applied):
            self.applied[group].append(replaced)

    def pop_best(self, trainer: _Trainer) -> tuple[int, int] | None:
        """The pair of the group with the most tokens (ties: the lower group) that has one
        reaching min_count, and its count there; None when no group has one."""
        for group in sorted(range(self.n), key=lambda g: (-self.tokens[g], g)):
            best = self._pop(trainer, group)
            if best is not None:
                self.chosen.append(group)
                return best
        return None

    def _pop(self, trainer: _Trainer, group: int) -> tuple[int, int] | None:
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
            current = trainer._rank(key, count, group)
            if rank == current:
                return key, count
            heappush(heap, current)
        return None


def _group_byte_pair_counts(buffer: bytes, of: array, weight: array | None,
                            n: int) -> list[Counter[tuple[int, int]]]:
    """Each group's byte pair counts (weights applied), from its texts joined by weight."""
    by_group_weight: dict[tuple[int, int], list[bytes]] = {}
    start = 1
    while start < len(buffer):
        end = buffer.index(SEPARATOR, start)
        w = 1 if weight is None else weight[start]
        by_group_weight.setdefault((of[start - 1], w), []).append(buffer[start:end])
        start = end + 1
    result: list[Counter[tuple[int, int]]] = [Counter() for _ in range(n)]
    separator = bytes([SEPARATOR])
    for (group, w), texts in by_group_weight.items():
        for pair, count in byte_pair_counts(separator.join(texts)).items():
            result[group][pair] += count * w
    return result


def train_grouped(
    texts: Sequence[str],
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
    check_arguments(vocab_size, min_pair_count, tie_break)
    text_list = as_text_list(texts)
    n = check_groups(text_list, groups, weights, multiplicities)
    packed = pack(text_list)
    size = len(packed.buffer)
    of = array("H", bytes(2 * size))
    weight = array("I", [1]) * size if weights is not None else None
    multiplicity = array("I", bytes(4 * size))
    tokens = [0] * n
    for index, (start, end) in enumerate(zip(packed.starts, packed.ends())):
        group = groups[index]
        of[start - 1:end] = array("H", [group]) * (end - start + 1)
        m = 1 if multiplicities is None else multiplicities[index]
        multiplicity[start:end] = array("I", [m]) * (end - start)
        tokens[group] += m * (end - start)
        if weight is not None and weights is not None:
            weight[start - 1:end] = array("I", [weights[index]]) * (end - start + 1)
    state = Groups(of, n, multiplicity, tokens, parity, global_merges)
    trainer = _Trainer(packed.buffer, vocab_size, min_pair_count, tie_break == "first", weight, state)
    training = trainer.run(progress)
    applied = [replaced[:len(training.merges)] for replaced in state.applied]
    chosen = state.chosen[:len(training.merges)]
    return GroupedTraining(training.merges, training.counts, training.applied, training.n_bytes,
                           training.stop_reason, chosen, applied)
