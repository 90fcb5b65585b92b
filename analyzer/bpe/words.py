"""The words a tokenization splits: a word (a run of characters between whitespace, as
Python's `str.isspace` and so the corpus count them) is split when a token starts strictly
inside it, inside one of its characters too (tokka-bench's continued words; `word_split_pct`
is the share of words so split).

`split_words` is the definition, from the tokens' bytes; the compiled engine finds the same
number in the pass that counts (`ranked.CompiledRanked.count`), and, for a library's tokens,
from their ids (`Spellings`).

>>> split_words("the cat sat", [b"the", b" c", b"at", b" sat"])
1
"""

from __future__ import annotations

import bisect
import itertools
import re
from array import array
from collections.abc import Sequence
from functools import lru_cache

from . import choice

_WORD = re.compile(r"\S+")


def split_words(text: str, pieces: Sequence[bytes]) -> int | None:
    """How many of the text's words a token boundary falls inside, the tokens' bytes given in
    order; None when they do not spell the text (a tokenizer that normalises it, or adds a
    space before it, other than SentencePiece's one leading space)."""
    data = text.encode("utf-8", errors="surrogatepass")
    spelled = b"".join(pieces)
    shift = 0
    if spelled != data:
        if spelled == b" " + data:  # SentencePiece's dummy prefix
            shift = 1
        else:
            return None
    starts = list(itertools.accumulate((len(piece) for piece in pieces[:-1]), initial=0))
    offsets = list(itertools.accumulate((len(char.encode("utf-8", errors="surrogatepass"))
                                         for char in text), initial=0))
    cut = 0
    for word in _WORD.finditer(text):
        first, last = offsets[word.start()] + shift, offsets[word.end()] + shift
        if bisect.bisect_left(starts, last) - bisect.bisect_right(starts, first) > 0:
            cut += 1
    return cut


@lru_cache(maxsize=1)
def word_spaces() -> bytes:
    """The whitespace words are cut at (Python's `str.isspace`, as `\\S+` finds a corpus's
    words), as the bitset the engine takes: every such character is below U+3001.

    >>> spaces = word_spaces(); bool(spaces[0x20 >> 3] >> (0x20 & 7) & 1), len(spaces)
    (True, 1537)
    """
    bits = bytearray((WORD_SPACE_LIMIT + 7) // 8)
    for code in range(WORD_SPACE_LIMIT):
        if chr(code).isspace():
            bits[code >> 3] |= 1 << (code & 7)
    return bytes(bits)


WORD_SPACE_LIMIT = 0x3001


class Spellings:
    """What each id of a tokenizer spells, to find the words a library's tokens split in
    compiled code (`split_words` of their bytes, without a Python loop a token)."""

    def __init__(self, pieces: Sequence[bytes]):
        self.pieces = list(pieces)
        self._blob = b"".join(self.pieces)
        self._starts = array("q", [0])
        for piece in self.pieces:
            self._starts.append(self._starts[-1] + len(piece))

    def split_words(self, texts: Sequence[str], ids: Sequence[Sequence[int]]) -> list[int | None]:
        """Each text's split words, its tokens' ids given (None where they do not spell it).

        >>> Spellings([b"the", b" c", b"at", b" sat"]).split_words(["the cat sat"], [[0, 1, 2, 3]])
        [1]
        """
        engine = choice.extension()
        if engine is None:
            return [split_words(text, [self.pieces[i] for i in text_ids])
                    for text, text_ids in zip(texts, ids)]
        flat, offsets = array("i"), array("q", [0])
        for text_ids in ids:
            flat.extend(text_ids)
            offsets.append(len(flat))
        found = array("q")
        found.frombytes(engine.split_words_by_ids(list(texts), flat.tobytes(), offsets, self._blob,
                                                  self._starts, word_spaces()))
        return [None if n < 0 else n for n in found]
