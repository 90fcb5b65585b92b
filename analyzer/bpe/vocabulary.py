"""Encode, decode and count with a learned merge list, in pure Python: the fallback engine's
`Vocabulary` (the compiled engine's is in `analyzer.bpe.compiled`), exactly `reference.encode`.

Encoding applies the merges in learned order, each once. Rather than pass over the text once
per merge, the replay keeps a heap of the ranks of merges whose pair is present, and the
positions of each such pair, recorded when the pair appears (byte pairs are searched for in
the original bytes). Absent merges cost nothing, so a short text encodes in time that depends
on its length, not on the vocabulary's size.

Counting all texts at many sizes is one replay: since a size is a prefix of the merge list,
the token counts just before merge `r` are the counts at size `256 + r`.

>>> vocab = Vocabulary([((97, 97), 256), ((256, 98), 257)])
>>> vocab.encode("aab")
[257]
>>> vocab.decode([257])
'aab'
>>> vocab.count_tokens(["aab", "b"], [256, 257, 258])
{256: [3, 1], 257: [2, 1], 258: [1, 1]}
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from heapq import heappop, heappush

from .contract import BaseVocabulary, Measurement
from .packing import pack
from .reference import FIRST_NEW_ID, Merge
from .tokens import (
    GAP,
    byte_pair_counts,
    byte_pair_positions,
    is_rare,
    rare_byte_pair_positions,
    read_tokens,
    replace_pair,
    token_array,
)


class Vocabulary(BaseVocabulary):
    """A merge list made ready for encoding, decoding and counting, in pure Python."""

    def __init__(self, merges: Sequence[Merge], pretokenizer: str | None = None):
        super().__init__(merges, pretokenizer)
        self.bits = max(8, (FIRST_NEW_ID + len(self.merges)).bit_length())
        self.rank_of: dict[int, int] = {}
        self.lengths = [1] * FIRST_NEW_ID
        self._pieces: list[bytes] = [bytes([byte]) for byte in range(FIRST_NEW_ID)]
        for rank, (left, right) in enumerate(self.pairs):
            # A pair listed twice acts at its first rank; later, none of it is left to merge.
            self.rank_of.setdefault(left << self.bits | right, rank)
            self.lengths.append(self.lengths[left] + self.lengths[right])
            self._pieces.append(self._pieces[left] + self._pieces[right])

    def token_bytes(self, token: int) -> bytes:
        """The bytes an id stands for; a ValueError for an id this vocabulary lacks."""
        self.check_id(token)
        return self._pieces[token]

    def _encode(self, text: str) -> list[int]:
        buffer = pack([text]).buffer
        tok = self._replay(buffer, len(self.merges))
        return read_tokens(tok, 1, len(buffer) - 1, self.lengths)

    def _measure(self, texts: list[str], sizes: list[int], roundtrip: bool) -> Measurement:
        text_list = texts
        packed = pack(text_list)
        counts = [end - start for start, end in zip(packed.starts, packed.ends())]
        result: dict[int, list[int]] = {}
        if not sizes and not roundtrip:
            return Measurement(result)
        last = sizes[-1] if sizes else self.size
        snapshots = [(size - FIRST_NEW_ID, size) for size in sizes]
        tok = self._replay(packed.buffer, last - FIRST_NEW_ID, _text_index(packed), counts,
                           snapshots, result)
        if not roundtrip:
            return Measurement(result)
        pieces = self._pieces
        ok = all(
            b"".join([pieces[i] for i in read_tokens(tok, start, end, self.lengths)])
            .decode("utf-8", errors="replace") == text
            for text, start, end in zip(text_list, packed.starts, packed.ends())
        )
        return Measurement(result, ok)

    def _histograms(self, texts: list[str], group_starts: list[int]) -> list[dict[int, int]]:
        packed = pack(texts)
        tok = self._replay(packed.buffer, len(self.merges))
        found: list[dict[int, int]] = []
        bounds = [*group_starts, len(texts)]
        for group in range(len(group_starts)):
            histogram: Counter[int] = Counter()
            for start, end in zip(packed.starts[bounds[group]:bounds[group + 1]],
                                  packed.ends()[bounds[group]:bounds[group + 1]]):
                histogram.update(read_tokens(tok, start, end, self.lengths))
            found.append(dict(histogram))
        return found

    def _replay(self, buffer: bytes, n_merges: int, text_of: array | None = None,
                counts: list[int] | None = None, snapshots: Sequence[tuple[int, int]] = (),
                result: dict[int, list[int]] | None = None) -> list[int]:
        """Apply the first `n_merges` merges to the packed buffer; return the token array.

        With `text_of` (position -> text) and `counts` (tokens per text), keep the counts
        up to date and copy them into `result[size]` just before the merge of rank
        `size - 256`, for each `(rank, size)` in `snapshots`.
        """
        # The trainer merges through the same `replace_pair`; here no pair counts are kept,
        # only the positions of the pairs the merge list will ask for.
        tok = token_array(buffer)
        rank_of, bits, lengths, merges = self.rank_of, self.bits, self.lengths, self.merges
        present = {pair: count for pair, count in byte_pair_counts(buffer).items()
                   if rank_of.get(pair[0] << bits | pair[1], n_merges) < n_merges}
        heap = sorted(rank_of[left << bits | right] for left, right in present)
        # Frequent byte pairs are found by a scan when their turn comes; rare ones now.
        rare = [pair for pair, count in present.items() if is_rare(count, buffer)]
        positions: dict[int, list[int]] = {
            left << bits | right: found
            for (left, right), found in rare_byte_pair_positions(buffer, rare).items()
        }
        positions_get = positions.get
        rank_get = rank_of.get
        pending = list(reversed(snapshots))
        while heap:
            rank = heappop(heap)
            while pending and pending[-1][0] <= rank:
                result[pending.pop()[1]] = list(counts)  # type: ignore[index, arg-type]
            (a, b), z = merges[rank]
            occurrences: Iterable[int] | None = positions.pop(a << bits | b, None)
            if occurrences is None:
                is_byte_pair = a < FIRST_NEW_ID and b < FIRST_NEW_ID
                occurrences = byte_pair_positions(buffer, a, b) if is_byte_pair else ()
            zkey = z << bits
            for i, x, start, y in replace_pair(tok, occurrences, a, lengths[a], b, lengths[b], z):
                if counts is not None:
                    counts[text_of[i]] -= 1  # type: ignore[index]
                if x != GAP:
                    key = x << bits | z
                    new_rank = rank_get(key)
                    if new_rank is not None and new_rank < n_merges:
                        recorded = positions_get(key)
                        if recorded is None:
                            positions[key] = [start]
                            heappush(heap, new_rank)
                        else:
                            recorded.append(start)
                if y >= 0:
                    key = zkey | y
                    new_rank = rank_get(key)
                    if new_rank is not None and new_rank < n_merges:
                        recorded = positions_get(key)
                        if recorded is None:
                            positions[key] = [i]
                            heappush(heap, new_rank)
                        else:
                            recorded.append(i)
        for _, size in reversed(pending):
            result[size] = list(counts)  # type: ignore[index, arg-type]
        return tok


def _text_index(packed) -> array:
    """For each position of the packed buffer, the index of the text it belongs to."""
    text_of = array("i", [0])  # the leading separator
    for index, (start, end) in enumerate(zip(packed.starts, packed.ends())):
        text_of.extend(array("i", [index]) * (end - start + 1))
    return text_of
