"""Merges added on top of a base vocabulary's ids: encoding and counting with them.

Continued training over a production tokenizer (`TokenIds(first_id=its size)`) learns merges
whose parts are the base's ids or earlier added ones: merge k creates `first_id + k`. To use
them, a text is cut and encoded by the base first (its own library, chunk by chunk), then the
added merges apply to each chunk's ids. Two libraries apply them in two ways, and the counts
must be the library's, since a builder runs the written tokenizer with it:

- `AddedMerges`, by pair (Hugging Face `tokenizers` with merges added to a tokenizer.json):
  the merges in order, each joining its own pair; exactly `reference.encode_ids`;
- `RankedMerges`, by bytes (tiktoken with ranks added to a rank file): repeatedly join the
  leftmost adjacent pair whose joined bytes have the lowest rank, base or added. It differs
  from the first where an added token next to another spells a base token (" 오\\xed" + "\\x9b\\x84"
  is " 오후", a token of Llama 3): tiktoken joins them, the merge list never does.

Both count every size from one application per chunk: the steps a chunk takes with every
merge allowed are the steps it takes with the first k, up to the first step that needs a later
merge (each step takes the lowest rank there is, so nothing before it changes). A chunk's
tokens at each size, and what each merge replaces, follow from its steps (`Trace`).

>>> added = AddedMerges([((300, 7), 1000), ((1000, 1000), 1001)], first_id=1000)
>>> added.apply([300, 7, 300, 7, 300])
[1001, 300]
>>> added.counts([[300, 7, 300, 7, 300]], [1000, 1001, 1002])
{1000: [5], 1001: [3], 1002: [2]}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from . import reference
from .contract import MAX_VOCAB_SIZE
from .reference import Merge


class Trace(NamedTuple):
    """A chunk under every added merge: its final ids, its tokens before any added merge, and
    for each added merge that changed it (in order), the tokens it had once that merge and
    every earlier one were allowed."""

    final: list[int]
    start: int
    steps: list[tuple[int, int]]
    """(the merge's index, tokens after it): the merges that shortened the chunk."""

    def tokens_at(self, n_merges: int) -> int:
        """The chunk's tokens with the first `n_merges` added merges."""
        tokens = self.start
        for index, after in self.steps:
            if index >= n_merges:
                break
            tokens = after
        return tokens


class AddedMerges:
    """A checked list of merges over a base's ids (merge k creates `first_id + k` from two
    ids that exist before it), applied by pair; ValueError naming the first bad merge.
    `base_bytes` (the base's ids' bytes) gives every id its bytes (`token_bytes`)."""

    def __init__(self, merges: Sequence[Merge], first_id: int,
                 base_bytes: Callable[[int], bytes] | None = None):
        if isinstance(first_id, bool) or not isinstance(first_id, int) or \
                not 0 < first_id <= MAX_VOCAB_SIZE:
            raise ValueError(f"first_id is {first_id!r}: a base's size, 1 to {MAX_VOCAB_SIZE:,}")
        self.first_id = first_id
        self.pairs: list[tuple[int, int]] = []
        for rank, merge in enumerate(merges):
            try:
                (left, right), new_id = merge
            except (TypeError, ValueError):
                raise ValueError(f"merge {rank} is {merge!r}, not ((left, right), new_id)") from None
            if new_id != first_id + rank:
                raise ValueError(f"merge {rank} creates id {new_id!r}; it must create {first_id + rank}")
            for part in (left, right):
                if isinstance(part, bool) or not isinstance(part, int) or not 0 <= part < new_id:
                    raise ValueError(f"merge {rank} uses id {part!r}, which does not exist before it")
            self.pairs.append((left, right))
        self._rank = {pair: self.first_id + k for k, pair in enumerate(self.pairs)}
        self._base_bytes = base_bytes
        self._known: dict[int, bytes] = {}  # base ids' bytes, once looked up
        self._bytes: list[bytes] = []  # the added tokens' bytes
        if base_bytes is not None:
            for left, right in self.pairs:
                self._bytes.append(self.token_bytes(left) + self.token_bytes(right))

    def token_bytes(self, token: int) -> bytes:
        """The bytes an id stands for (ValueError without the base's bytes)."""
        if token >= self.first_id:
            return self._bytes[token - self.first_id]
        found = self._known.get(token)
        if found is None:
            if self._base_bytes is None:
                raise ValueError("these merges were given no base_bytes: their ids have no bytes")
            found = self._known[token] = self._base_bytes(token)
        return found

    @property
    def size(self) -> int:
        """The base's ids and the added ones."""
        return self.first_id + len(self.pairs)

    def apply(self, ids: Sequence[int], n_merges: int | None = None) -> list[int]:
        """The ids with the first `n_merges` added merges applied (default: all)."""
        limit = self.size if n_merges is None else self.first_id + n_merges
        return self._run(ids, limit)[0]

    def trace(self, ids: Sequence[int]) -> Trace:
        """The chunk's steps under every merge (see `Trace`)."""
        if len(ids) < 2:  # most chunks: one token of the base, nothing to join
            return Trace(list(ids), len(ids), [])
        final, steps = self._run(ids, self.size)
        return Trace(final, len(ids), steps)

    def _run(self, ids: Sequence[int], limit: int) -> tuple[list[int], list[tuple[int, int]]]:
        # The lowest new id among adjacent pairs, every occurrence of it, until none is left:
        # the merges in order (a merge's pair only ever appears after the merges before it).
        rank = self._rank
        ids = list(ids)
        steps: list[tuple[int, int]] = []
        while len(ids) > 1:
            best = limit
            for pair in zip(ids, ids[1:]):
                new_id = rank.get(pair, limit)
                if new_id < best:
                    best = new_id
            if best >= limit:
                break
            ids = reference.merge(ids, self.pairs[best - self.first_id], best)
            steps.append((best - self.first_id, len(ids)))
        return ids, steps

    def counts(self, sequences: Iterable[Sequence[int]], sizes: Iterable[int]) -> dict[int, list[int]]:
        """`{size: [tokens of each sequence]}`, a size being the base's plus some added merges
        (from `first_id` to `size`), from one trace of each sequence."""
        wanted = self.checked_sizes(sizes)
        traces = [self.trace(ids) for ids in sequences]
        return {size: [t.tokens_at(size - self.first_id) for t in traces] for size in wanted}

    def replaced(self, traces: Iterable[tuple[Trace, int]]) -> list[int]:
        """Occurrences each added merge replaces over chunks (each trace with how often its
        chunk occurs): how much the tokens fall as that merge is allowed."""
        found = [0] * len(self.pairs)
        for trace, occurrences in traces:
            before = trace.start
            for index, after in trace.steps:
                found[index] += (before - after) * occurrences
                before = after
        return found

    def checked_sizes(self, sizes: Iterable[int]) -> list[int]:
        """The sizes, ascending and unique; ValueError for one these merges do not have."""
        ordered = sorted(set(sizes))
        for size in ordered:
            if isinstance(size, bool) or not isinstance(size, int) \
                    or not self.first_id <= size <= self.size:
                raise ValueError(f"size {size!r} is outside {self.first_id}..{self.size}, the "
                                 "sizes of the base with these added merges")
        return ordered


class RankedMerges(AddedMerges):
    """The same merges applied by bytes, as tiktoken applies a rank file: each added token
    ranks after the base's, `first_id + k`, and every step joins the leftmost adjacent pair
    whose bytes together have the lowest rank of all (a base token's, or an allowed added
    one's). `ranks` are the base's (bytes -> rank, a rank being the id), `base_bytes` its ids'
    bytes.

    >>> ranks = {b"a": 0, b"b": 1, b"c": 2, b"abc": 3}  # "abc": a token no two others make
    >>> ranked = RankedMerges([((0, 1), 4)], 4, ranks, [b"a", b"b", b"c", b"abc"].__getitem__)
    >>> ranked.apply([0, 1, 2]), AddedMerges([((0, 1), 4)], 4).apply([0, 1, 2])
    ([3], [4, 2])
    >>> ranked.trace([0, 1, 2])
    Trace(final=[3], start=3, steps=[(0, 1)])
    """

    def __init__(self, merges: Sequence[Merge], first_id: int, ranks: Mapping[bytes, int],
                 base_bytes: Callable[[int], bytes]):
        super().__init__(merges, first_id, base_bytes)
        self._ranks = dict(ranks)
        for k, token in enumerate(self._bytes):
            self._ranks.setdefault(token, self.first_id + k)

    def _run(self, ids: Sequence[int], limit: int) -> tuple[list[int], list[tuple[int, int]]]:
        ranks = self._ranks
        pieces = [self.token_bytes(token) for token in ids]
        ids = list(ids)
        steps: list[tuple[int, int]] = []
        highest = -1  # the latest added merge the steps so far needed
        while len(ids) > 1:
            best, at = limit, -1
            for i in range(len(ids) - 1):
                rank = ranks.get(pieces[i] + pieces[i + 1], limit)
                if rank < best:
                    best, at = rank, i
            if at < 0:
                break
            pieces[at:at + 2] = [pieces[at] + pieces[at + 1]]
            ids[at:at + 2] = [best]
            index = best - self.first_id
            if index > highest:
                highest = index
            # A step needs every merge up to the latest one so far (a base token re-formed
            # after an added merge counts as that merge's).
            if steps and steps[-1][0] == highest:
                steps[-1] = (highest, len(ids))
            elif highest >= 0:
                steps.append((highest, len(ids)))
        return ids, steps
