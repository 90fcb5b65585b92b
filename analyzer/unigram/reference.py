"""The literal Unigram trainer: slow, short, and the contract the compiled engine must meet.

Kudo (2018)'s unigram language model, trained as SentencePiece's `unigram_model_trainer.cc`
does, on byte strings: the run's distinct chunks, each with how often it occurs. Every step is
written out here with every tie and every float operation in a fixed order, so that the compiled
engine (`analyzer/unigram/engine/`) gives the same pieces, the same scores to the last bit and
the same ids, on any number of threads. Read it top to bottom:

1. **Seeds** (`Trainer.seed`). Every byte that occurs, scored by its frequency; then the
   substrings of 2 to `max_piece_bytes` bytes that occur at least twice (chunk counts applied)
   and are *right-maximal*: not always followed by the same byte (ending a chunk counts as a
   follower of its own), or `max_piece_bytes` long. Each is scored by frequency x length; the
   `seed_size` best (score descending, then bytes ascending) are kept. Scores become log
   probabilities: log(score) - log(sum of all scores).
2. **EM** (`Trainer.em`). The E-step runs forward-backward over each chunk's lattice (every
   piece that matches at every position; a position with no one-byte piece gets an *unknown*
   node scored min_score - 10, counted for nothing), in probabilities exp(score), a sum that
   leaves [2^-512, 2^512) kept as a mantissa and a power of two (exact), and adds count x
   marginal to each piece's expected count, each addition rounded to a multiple of 2**-24 and
   summed as an integer, so the sum is the same in any order. The M-step drops the pieces
   expected fewer than 0.5 times and scores the rest digamma(expected) - digamma(sum) (the
   Bayesian EM SentencePiece uses).
3. **Pruning** (`Trainer.prune`). Each piece's best segmentation by the others (its Viterbi
   path with its own node left out) is its alternative; a piece whose own best path is already
   split goes, one with no alternative stays; the others are ranked by the loss of likelihood
   if their Viterbi occurrences were segmented by the alternative, and the most costly are
   kept until max(desired, shrink x pieces) remain.
4. **Finalize** (`Trainer.finalize`). All 256 bytes (those lost in training get min_score less
   a penalty growing by 0.0001, most frequent first: SentencePiece's comment says so, its
   code adds it), then the best-scored longer pieces up to
   the size; ids by score descending, then bytes ascending.

`train` (in `analyzer.unigram.trainer`) runs EM `sub_iterations` times, prunes, and repeats
until at most size x 1.1 pieces remain, as SentencePiece does.

>>> trainer = Trainer({b"hug": 10, b"pug": 5, b"hugs": 5})
>>> trainer.seed(seed_size=1000)
>>> [piece for piece, _ in trainer.model()]
[b'g', b'u', b'h', b'p', b's', b'hug', b'ug', b'hugs', b'pug', b'ugs', b'gs']
>>> trainer.em()
>>> [piece for piece, _ in trainer.model()]
[b'h', b'hug', b'ug', b'hugs', b'pug']
>>> pieces, scores = trainer.finalize(260)
>>> pieces[:6], len(pieces)
([b'hug', b'pug', b'hugs', b'ug', b'g', b'h'], 260)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

MAX_PIECE_BYTES = 16
"""The longest piece, in bytes (SentencePiece's and Hugging Face's default, in their symbols)."""
SEED_SIZE = 1_000_000
"""Seed substrings kept (SentencePiece's `seed_sentencepiece_size`)."""
SHRINK = 0.75
"""The share of pieces a pruning round keeps (SentencePiece's `shrinking_factor`)."""
SUB_ITERATIONS = 2
"""EM steps between prunings (SentencePiece's `num_sub_iterations`)."""
DESIRED_MARGIN = 1.1
"""EM ends once at most size x this many pieces remain; finalize keeps the best `size`."""
MIN_EXPECTED = 0.5
"""The M-step drops pieces expected fewer times than this."""
UNKNOWN_PENALTY = 10.0
"""An unknown node's score is the model's lowest score minus this."""
BYTE_PENALTY_STEP = 0.0001
"""Each byte finalize adds back scores this much lower than the last (most frequent first)."""
RESCALE_BELOW = 2.0 ** -512
RESCALE_FROM = 2.0 ** 512
"""A forward or backward sum outside [RESCALE_BELOW, RESCALE_FROM) is renormalized."""
FIXED = 1 << 24
"""Expected counts are summed in units of 1/FIXED: integers, so in any order alike."""


def digamma(x: float) -> float:
    """The digamma function, as SentencePiece computes it (its `Digamma`).

    >>> round(digamma(1.0), 6)
    -0.577216
    """
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 1.0 / 2.0
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    result += (math.log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4
               + (31.0 / 8064.0) * xx4 * xx2 - (127.0 / 30720.0) * xx4 * xx4)
    return result


def scaled(value: float, exponent: int) -> float:
    """value x 2^exponent (exact, unless it leaves the doubles).

    >>> scaled(0.75, 2), scaled(0.75, 0)
    (3.0, 0.75)
    """
    return math.ldexp(value, exponent) if exponent else value


def normalized(total: float, exponent: int) -> tuple[float, int]:
    """A sum and its power of two, renormalized (mantissa in [0.5, 1)) where the sum left
    [2^-512, 2^512).

    >>> normalized(0.25, 3), normalized(2.0 ** -600, 3)
    ((0.25, 3), (0.5, -596))
    """
    if total != 0.0 and not RESCALE_BELOW <= total < RESCALE_FROM:
        mantissa, shift = math.frexp(total)
        return mantissa, exponent + shift
    return total, exponent


def to_fixed(value: float) -> int:
    """A non-negative expected count in units of 1/FIXED, rounded half up.

    >>> to_fixed(0.5) == FIXED // 2
    True
    """
    return math.floor(value * FIXED + 0.5)


class Trainer:
    """The training state: the chunks with their counts, and the model (pieces in order, each
    with its score). Its methods are the steps; `analyzer.unigram.trainer.train` runs them."""

    def __init__(self, chunk_counts: Mapping[bytes, int] | Iterable[tuple[bytes, int]],
                 max_piece_bytes: int = MAX_PIECE_BYTES):
        # (chunk, count) pairs are taken as they come, a chunk twice included: as the compiled
        # engine reads a packed table (summing them first would change the float sums' order)
        pairs = chunk_counts.items() if isinstance(chunk_counts, Mapping) else chunk_counts
        self.chunks = list(pairs)
        self.max_piece_bytes = max_piece_bytes
        self.pieces: list[bytes] = []
        self.scores: list[float] = []
        self.byte_counts = [0] * 256
        self.work = 0
        """Substrings looked at, seeding and building lattices: what a training's time grows
        as (tests/test_long_chunks.py bounds it, as the compiled engine's steps)."""
        for chunk, count in self.chunks:
            for byte in chunk:
                self.byte_counts[byte] += count

    def model(self) -> list[tuple[bytes, float]]:
        return list(zip(self.pieces, self.scores))

    def __len__(self) -> int:
        return len(self.pieces)

    # 1. Seeds --------------------------------------------------------------------------------

    def seed(self, seed_size: int = SEED_SIZE) -> None:
        """The seed model: the bytes that occur, then the best `seed_size` substrings."""
        counts: dict[bytes, int] = {}
        followers: dict[bytes, set[int]] = {}
        for chunk, count in self.chunks:
            n = len(chunk)
            for start in range(n):
                self.work += max(0, min(self.max_piece_bytes, n - start) - 1)
                for length in range(2, min(self.max_piece_bytes, n - start) + 1):
                    piece = chunk[start:start + length]
                    counts[piece] = counts.get(piece, 0) + count
                    end = start + length
                    # -1: this occurrence ends its chunk, a follower no other shares
                    followers.setdefault(piece, set()).add(chunk[end] if end < n else -1)
        substrings = [(count * len(piece), piece) for piece, count in counts.items()
                      if count >= 2 and (len(piece) == self.max_piece_bytes
                                         or -1 in followers[piece] or len(followers[piece]) >= 2)]
        substrings.sort(key=lambda item: (-item[0], item[1]))
        present = sorted((byte for byte in range(256) if self.byte_counts[byte]),
                         key=lambda byte: (-self.byte_counts[byte], byte))
        seeds = [(bytes([byte]), self.byte_counts[byte]) for byte in present]
        seeds += [(piece, score) for score, piece in substrings[:seed_size]]
        log_total = math.log(float(sum(score for _, score in seeds))) if seeds else 0.0
        self.pieces = [piece for piece, _ in seeds]
        self.scores = [math.log(float(score)) - log_total for _, score in seeds]

    # The lattice -----------------------------------------------------------------------------

    def _index(self) -> dict[bytes, int]:
        return {piece: id for id, piece in enumerate(self.pieces)}

    def _min_score(self) -> float:
        return min(self.scores) if self.scores else 0.0

    def _nodes(self, text: bytes, index: dict[bytes, int], unknown: float
               ) -> list[list[tuple[int, int, float]]]:
        """`ends[e]`: the nodes that end at e, as (start, id, score), starts ascending (the
        longest first); id -1 is an unknown byte."""
        n = len(text)
        ends: list[list[tuple[int, int, float]]] = [[] for _ in range(n + 1)]
        for end in range(1, n + 1):
            self.work += end - max(0, end - self.max_piece_bytes)
            for start in range(max(0, end - self.max_piece_bytes), end):
                id = index.get(text[start:end], -1)
                if id >= 0:
                    ends[end].append((start, id, self.scores[id]))
                elif start == end - 1:
                    ends[end].append((start, -1, unknown))
        return ends

    @staticmethod
    def _viterbi(ends: list[list[tuple[int, int, float]]], skip_whole: bool = False
                 ) -> list[int] | None:
        """The best path's ids (None: there is none). Each end takes the first node (starts
        ascending) with the strictly highest score so far; `skip_whole` leaves out the node
        that spans the whole text."""
        n = len(ends) - 1
        best: list[float | None] = [0.0] + [None] * n
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        for end in range(1, n + 1):
            for start, id, score in ends[end]:
                if skip_whole and start == 0 and end == n:
                    continue
                before = best[start]
                if before is None:
                    continue
                value = before + score
                current = best[end]
                if current is None or value > current:
                    best[end] = value
                    back[end] = (start, id)
        if best[n] is None:
            return None
        path, end = [], n
        while end > 0:
            start, id = back[end]
            path.append(id)
            end = start
        return path[::-1]

    # 2. EM -----------------------------------------------------------------------------------

    def expected(self) -> list[int]:
        """The E-step: each piece's expected count, in units of 1/FIXED."""
        index, unknown = self._index(), self._min_score() - UNKNOWN_PENALTY
        probability = {id: math.exp(score) for id, score in enumerate(self.scores)}
        probability[-1] = math.exp(unknown)
        expected = [0] * len(self.pieces)
        for chunk, count in self.chunks:
            n = len(chunk)
            ends = self._nodes(chunk, index, unknown)
            starts: list[list[tuple[int, int, float]]] = [[] for _ in range(n + 1)]
            for end in range(1, n + 1):
                for start, id, score in ends[end]:
                    starts[start].append((end, id, score))  # ends ascending
            # Forward-backward in probabilities; a position's sum that leaves [2^-512, 2^512)
            # is kept as a mantissa and a power of two (frexp), so no text is too long.
            alpha, alpha_exp = [1.0] * (n + 1), [0] * (n + 1)
            for end in range(1, n + 1):
                base, total = alpha_exp[end - 1], 0.0
                for start, id, _ in ends[end]:
                    total += scaled(alpha[start], alpha_exp[start] - base) * probability[id]
                alpha[end], alpha_exp[end] = normalized(total, base)
            beta, beta_exp = [1.0] * (n + 1), [0] * (n + 1)
            for start in range(n - 1, -1, -1):
                base, total = beta_exp[start + 1], 0.0
                for end, id, _ in starts[start]:
                    total += scaled(beta[end], beta_exp[end] - base) * probability[id]
                beta[start], beta_exp[start] = normalized(total, base)
            if alpha[n] == 0.0:
                continue  # every path underflowed: the chunk adds nothing
            for end in range(1, n + 1):
                for start, id, _ in ends[end]:
                    if id >= 0:
                        marginal = scaled(alpha[start] * probability[id] * beta[end] / alpha[n],
                                          alpha_exp[start] + beta_exp[end] - alpha_exp[n])
                        expected[id] += to_fixed(float(count) * marginal)
        return expected

    def em(self) -> None:
        """One E-step and M-step."""
        expected = self.expected()
        kept = [id for id, fixed in enumerate(expected) if fixed / FIXED >= MIN_EXPECTED]
        log_sum = digamma(sum(expected[id] for id in kept) / FIXED) if kept else 0.0
        self.scores = [digamma(expected[id] / FIXED) - log_sum for id in kept]
        self.pieces = [self.pieces[id] for id in kept]

    # 3. Pruning ------------------------------------------------------------------------------

    def prune(self, desired: int, shrink: float = SHRINK) -> None:
        """Keep max(desired, shrink x pieces) pieces: those with no alternative, then those
        whose loss would cost the most (loss descending, then place in the model)."""
        index, unknown = self._index(), self._min_score() - UNKNOWN_PENALTY
        removable = [False] * len(self.pieces)
        alternatives: list[list[int]] = [[] for _ in self.pieces]
        for id, piece in enumerate(self.pieces):
            ends = self._nodes(piece, index, unknown)
            best = self._viterbi(ends)
            assert best is not None
            if len(best) >= 2:
                removable[id] = True  # segmented otherwise already
                continue
            second = self._viterbi(ends, skip_whole=True)
            if second is not None and -1 not in second:
                alternatives[id] = second
        frequency = [0] * len(self.pieces)
        total_count = 0
        for chunk, count in self.chunks:
            total_count += count
            path = self._viterbi(self._nodes(chunk, index, unknown))
            assert path is not None
            for id in path:
                if id >= 0:
                    frequency[id] += count
        total = sum(frequency)
        log_total = math.log(float(total)) if total else 0.0
        kept: list[int] = []
        candidates: list[tuple[float, int]] = []
        for id in range(len(self.pieces)):
            if frequency[id] == 0 or removable[id]:
                continue
            if not alternatives[id]:
                kept.append(id)
                continue
            share = frequency[id] / total_count
            logprob = math.log(float(frequency[id])) - log_total
            log_total_alt = math.log(float(total + frequency[id] * (len(alternatives[id]) - 1)))
            logprob_alt = 0.0
            for other in alternatives[id]:
                logprob_alt += math.log(float(frequency[other] + frequency[id])) - log_total_alt
            candidates.append((share * (logprob - logprob_alt), id))
        target = max(desired, int(shrink * len(self.pieces)))
        candidates.sort(key=lambda item: (-item[0], item[1]))
        for _, id in candidates:
            if len(kept) >= target:
                break
            kept.append(id)
        self.pieces = [self.pieces[id] for id in kept]
        self.scores = [self.scores[id] for id in kept]

    # 4. Finalize -----------------------------------------------------------------------------

    def finalize(self, size: int) -> tuple[list[bytes], list[float]]:
        """The vocabulary: all 256 bytes, then the best longer pieces up to `size` entries;
        sorted by score descending, then bytes ascending (ids in that order)."""
        scores = dict(zip(self.pieces, self.scores))
        low, penalty = self._min_score(), 0.0
        final: dict[bytes, float] = {}
        for byte in sorted(range(256), key=lambda b: (-self.byte_counts[b], b)):
            piece = bytes([byte])
            if piece in scores:
                final[piece] = scores[piece]
            else:
                final[piece] = low - penalty
                penalty += BYTE_PENALTY_STEP
        longer = sorted(((score, piece) for piece, score in scores.items() if len(piece) > 1),
                        key=lambda item: (-item[0], item[1]))
        for score, piece in longer:
            if len(final) >= size:
                break
            final[piece] = score
        ordered = sorted(final.items(), key=lambda item: (-item[1], item[0]))
        return [piece for piece, _ in ordered], [score for _, score in ordered]
