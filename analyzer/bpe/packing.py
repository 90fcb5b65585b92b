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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate

SEPARATOR = 0xFF
"""The byte between texts: not a valid UTF-8 byte, so it never occurs inside one."""


@dataclass(frozen=True)
class Packed:
    buffer: bytes
    starts: list[int]
    """Position of each text's first byte in `buffer`."""

    def ends(self) -> list[int]:
        """Position just past each text's last byte (its trailing separator)."""
        return [start - 1 for start in self.starts[1:]] + [len(self.buffer) - 1]


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
