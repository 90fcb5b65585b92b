"""The token array both the trainer and the replay edit in place.

`tok` has one slot per byte of the packed buffer. A token occupies the bytes from its start
to its end and is stored only once, at its start:

- `tok[start]` is the token's id (>= 0);
- `tok[last]`, for a token of two or more bytes, is `~start` (<= -2), so the left neighbour
  of position i is found from `tok[i - 1]` without a linked list;
- every other slot, and every separator between texts, holds GAP (-1).

The right neighbour of a token starting at i starts at `i + length[tok[i]]`.

>>> tok = token_array(b"\\xffab\\xff")
>>> tok
[-1, 97, 98, -1]
>>> read_tokens(tok, 1, 3, [1] * 256)
[97, 98]
"""

from __future__ import annotations

import re
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import compress
from operator import methodcaller

from .packing import SEPARATOR

GAP = -1


def token_array(buffer: bytes) -> list[int]:
    """One byte token per position; separators become GAP."""
    tok = list(buffer)
    position = buffer.find(SEPARATOR)
    while position != -1:
        tok[position] = GAP
        position = buffer.find(SEPARATOR, position + 1)
    return tok


_start = methodcaller("start")


def byte_pair_positions(buffer: bytes, left: int, right: int, start: int = 0) -> Iterator[int]:
    """Every position of the byte pair in `buffer`, ascending, overlaps included.

    Byte pairs are never created by merges, only destroyed, so the positions in the original
    buffer are a superset of the current ones; callers check each against `tok`.

    >>> list(byte_pair_positions(b"aaab", 97, 97))
    [0, 1]
    """
    literal = re.escape(bytes((left, right)))
    # (?=..) finds overlapping matches; it is only needed when the pair can overlap itself.
    pattern = re.compile(b"(?=" + literal + b")" if left == right else literal)
    return map(_start, pattern.finditer(buffer, start))

SCAN_SHARE = 300
"""A byte pair occurring at least once per this many bytes is found by scanning the buffer
(the scan costs under a tenth of the work its hits then cause); rarer ones are worth
indexing in one pass with `rare_byte_pair_positions` instead of one scan each."""


def _pair_views(buffer: bytes) -> list[tuple[int, array]]:
    """The buffer as 16-bit ints from offset 0 and from offset 1: every adjacent pair once.

    Each value is `left | right << 8`.
    """
    views = []
    for offset in (0, 1):
        chunk = buffer[offset:]
        view = array("H")
        view.frombytes(chunk[: len(chunk) - len(chunk) % 2])
        if sys.byteorder == "big":
            view.byteswap()
        views.append((offset, view))
    return views


def byte_pair_counts(buffer: bytes) -> Counter[tuple[int, int]]:
    """Every adjacent byte pair in `buffer` and its count, overlaps included, at C speed.

    Pairs with a separator are left out.

    >>> byte_pair_counts(b"\\xffaaa\\xff")
    Counter({(97, 97): 2})
    """
    halves: Counter[int] = Counter()
    for _, view in _pair_views(buffer):
        halves.update(view)
    counts: Counter[tuple[int, int]] = Counter()
    for value, count in halves.items():
        left, right = value & 0xFF, value >> 8
        if SEPARATOR not in (left, right):
            counts[left, right] = count
    return counts


def is_rare(count: int, buffer: bytes) -> bool:
    """Whether a byte pair is rare enough to be indexed rather than scanned for."""
    return count * SCAN_SHARE < len(buffer)


def rare_byte_pair_positions(buffer: bytes, pairs: Iterable[tuple[int, int]]
                             ) -> dict[tuple[int, int], list[int]]:
    """The ascending positions of many byte pairs, found in one pass at C speed.

    >>> rare_byte_pair_positions(b"abcab", [(97, 98), (99, 97)])
    {(97, 98): [0, 3], (99, 97): [2]}
    """
    wanted = {left | right << 8 for left, right in pairs}
    found: dict[int, list[int]] = {value: [] for value in wanted}
    for offset, view in _pair_views(buffer):
        for index in compress(range(len(view)), map(wanted.__contains__, view)):
            found[view[index]].append(2 * index + offset)
    for positions in found.values():
        positions.sort()  # two ascending runs, even and odd offsets: a cheap merge
    return {(value & 0xFF, value >> 8): positions for value, positions in found.items()}


def replace_pair(tok: list[int], occurrences: Iterable[int], a: int, a_length: int, b: int,
                 b_length: int, z: int) -> Iterator[tuple[int, int, int, int]]:
    """Replace each current occurrence of the pair (a, b) by z, in place, left to right.

    `occurrences` are candidate positions, ascending; stale ones (no longer an `a` followed by
    a `b`) are skipped, so overlapping runs like `aaa` are merged once, from the left. For each
    replacement it yields `(i, left, left_start, right)`: where z starts, the token just before
    it and where that one starts (`left` is GAP at a text's start), and the token just after it
    (negative at a text's end). The trainer and the replay both merge through this loop; what
    they do with each neighbour is theirs.

    >>> tok = token_array(b"\\xffaaab\\xff")
    >>> list(replace_pair(tok, [1, 2, 3], 97, 1, 97, 1, 256))
    [(1, -1, 0, 97)]
    >>> tok
    [-1, 256, -2, 97, 98, -1]
    """
    for i in occurrences:
        if tok[i] != a:
            continue
        j = i + a_length
        if tok[j] != b:
            continue
        k = j + b_length
        tok[i] = z
        tok[j] = GAP
        tok[k - 1] = ~i
        left = tok[i - 1]
        left_start = i - 1
        if left < GAP:  # the last byte of a longer token: it says where that token starts
            left_start = ~left
            left = tok[left_start]
        yield i, left, left_start, tok[k]


def read_tokens(tok: list[int], start: int, end: int, lengths: list[int]) -> list[int]:
    """The ids of the tokens from position `start` up to `end`, walking token by token."""
    ids = []
    position = start
    while position < end:
        token = tok[position]
        ids.append(token)
        position += lengths[token]
    return ids
