"""Lay several texts out as one byte buffer, so the engine works on a single array.

Texts are joined by the byte 0xFF, which never occurs in UTF-8, and the buffer starts and
ends with it too. So no pair can span two texts, every position has a left and a right
neighbour, and a byte pair can be found in the buffer with a plain substring search.

>>> packed = pack(["ab", "c"])
>>> packed.buffer
b'\\xffab\\xffc\\xff'
>>> packed.starts
[1, 4]
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate

SEPARATOR = 0xFF
"""The byte between texts: not a valid UTF-8 byte, so it never occurs inside one."""
SEPARATOR_BYTE = bytes([SEPARATOR])


@dataclass(frozen=True)
class Packed:
    buffer: bytes
    starts: Sequence[int]
    """Position of each text's first byte in `buffer` (a list, or an int64 array)."""

    def ends(self) -> list[int]:
        """Position just past each text's last byte (its trailing separator)."""
        return [start - 1 for start in self.starts[1:]] + [len(self.buffer) - 1]


class PackedChunks(Sequence[str]):
    """Chunks kept as their UTF-8 end to end with offsets (one more than the chunks), as a
    training source's chunk-count table holds them: a sequence of str made one at a time when
    read, and `packed()` lays them out for the engine without a str per chunk (millions of
    them, at gigabyte scale).

    >>> chunks = PackedChunks(b"abc", [0, 2, 3])
    >>> packed = chunks.packed()
    >>> list(chunks), packed.buffer, list(packed.starts)
    (['ab', 'c'], b'\\xffab\\xffc\\xff', [1, 4])
    """

    def __init__(self, data: bytes, offsets: Sequence[int]):
        self.data = data
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        k = range(len(self))[index]  # negative indices; IndexError past the end
        return self.data[self.offsets[k]:self.offsets[k + 1]].decode("utf-8")

    def __iter__(self):
        data, offsets = self.data, self.offsets
        for k in range(len(self)):
            yield data[offsets[k]:offsets[k + 1]].decode("utf-8")

    def packed(self) -> Packed:
        """`pack(list(self))`, from the bytes as they are (no str is made)."""
        data, offsets, n = self.data, self.offsets, len(self)
        pieces = [b""]  # the separator before the first chunk, between and after them
        step = 1 << 16  # chunks joined at a time: a few MB of slices alive at once
        for begin in range(0, n, step):
            bounds = offsets[begin:min(n, begin + step) + 1]
            pieces.append(SEPARATOR_BYTE.join([data[start:end] for start, end
                                               in zip(bounds, bounds[1:])]))
        pieces.append(b"")
        # Chunk k starts after its bytes' offset and the k + 1 separators before it.
        starts = array("q", map(int.__add__, offsets[:n], range(1, n + 1)))
        return Packed(SEPARATOR_BYTE.join(pieces), starts)


def join_packed(parts: Sequence[Packed]) -> Packed:
    """The texts of every part, in order, as one `Packed` (`pack` of their texts joined).

    >>> joined = join_packed([pack(["ab"]), pack([]), pack(["c", ""])])
    >>> joined.buffer == pack(["ab", "c", ""]).buffer, list(joined.starts)
    (True, [1, 4, 6])
    """
    pieces: list[memoryview] = []
    starts = array("q")
    length = 0  # of the joined buffer so far
    for part in parts:
        # Each part starts and ends with a separator: a part after the first gives up its
        # leading one, which the part before ends with.
        shift = length - 1 if pieces else 0
        pieces.append(memoryview(part.buffer)[1 if pieces else 0:])
        length += len(pieces[-1])
        starts.extend(map(shift.__add__, part.starts))
    return Packed(b"".join(pieces) if pieces else SEPARATOR_BYTE, starts)


def as_text_list(texts: str | Iterable[str]) -> list[str]:
    """A single str is one text; anything else is an iterable of texts."""
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, (bytes, bytearray)):
        raise TypeError("texts must be str or an iterable of str, not bytes")
    text_list = list(texts)
    if set(map(type, text_list)) - {str}:  # one pass in C; then, if needed, find the culprit
        for index, text in enumerate(text_list):
            if not isinstance(text, str):
                raise TypeError(f"text {index} is {type(text).__name__}, not str")
    return text_list


def as_bytes(chunk: str | bytes) -> bytes:
    """A chunk's UTF-8 (surrogate escapes as the bytes they stand for), as the Unigram and
    WordPiece engines take their chunks.

    >>> as_bytes("é"), as_bytes(b"\\xff")
    (b'\\xc3\\xa9', b'\\xff')
    """
    return chunk.encode("utf-8", errors="surrogateescape") if isinstance(chunk, str) else chunk


def utf8(text: str, index: int = 0) -> bytes:
    """UTF-8 bytes of `text`; a lone surrogate is a ValueError saying where it is."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = text[error.start]
        raise ValueError(
            f"text {index}, character {error.start}: {bad!r} is not valid Unicode "
            "(a lone surrogate) and has no UTF-8 encoding"
        ) from None


@dataclass
class PackedIds:
    """Sequences of ids in one token array, as `pack` lays out bytes: GAP before, between and
    after them, one slot per id."""

    tok: list[int]
    starts: list[int]
    """Position of each sequence's first id in `tok`."""

    def ends(self) -> list[int]:
        """Position just past each sequence's last id (its trailing GAP)."""
        return [start - 1 for start in self.starts[1:]] + [len(self.tok) - 1]


def pack_ids(sequences: Iterable[Sequence[int]]) -> PackedIds:
    """Join id sequences into one GAP-delimited token array (ids checked by the caller).

    >>> packed = pack_ids([[300, 7], [9]])
    >>> packed.tok, packed.starts
    ([-1, 300, 7, -1, 9, -1], [1, 4])
    """
    tok = [-1]
    starts = []
    for ids in sequences:
        starts.append(len(tok))
        tok.extend(ids)
        tok.append(-1)
    return PackedIds(tok, starts)


def pack(texts: str | Iterable[str]) -> Packed:
    """Encode and join texts into one separator-delimited buffer.

    >>> packed = pack(["ab", "", "c"])
    >>> packed.buffer, packed.starts
    (b'\\xffab\\xff\\xffc\\xff', [1, 4, 5])
    """
    text_list = as_text_list(texts)
    try:
        encoded = [text.encode("utf-8") for text in text_list]
    except UnicodeEncodeError:
        for index, text in enumerate(text_list):
            utf8(text, index)  # raises, naming the text and the character
        raise
    # A separator before, between and after the texts: b"" at both ends of the join.
    starts = list(accumulate((len(data) + 1 for data in encoded), initial=1))[:-1]
    return Packed(bytes([SEPARATOR]).join([b"", *encoded, b""]), starts)
