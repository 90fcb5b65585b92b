"""Train a WordPiece vocabulary, as Hugging Face's `WordPieceTrainer` does, on either engine.

Both engines take the same steps (`analyzer.wordpiece.reference`, the definition, and the
compiled `analyzer.wordpiece._engine`) and give the same vocabulary; the compiled one is used
when it was built (`ANALYZER_ENGINE` decides as for BPE). The input is the chunks' bytes end to
end with offsets and counts (`Packed`), as a training source's tables hold them; `train` packs
a dict of chunks and counts first.

>>> train({"hug": 10, "pug": 5, "hugs": 5}, 516)[512:]
[b'##ug', b'hug', b'pug', b'hugs']
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass

from analyzer.bpe import choice
from analyzer.unigram.trainer import as_bytes

from . import reference
from .reference import ALPHABET


@dataclass(frozen=True)
class Packed:
    """Distinct chunks end to end: chunk k is data[offsets[k]:offsets[k + 1]] (int64 offsets,
    one more than the chunks), occurring counts[k] times (int64, at least 1)."""

    data: bytes
    offsets: array
    counts: array

    def items(self) -> list[tuple[bytes, int]]:
        """Each chunk with its count.

        >>> pack({"ab": 2, "c": 1}).items()
        [(b'ab', 2), (b'c', 1)]
        """
        offsets = self.offsets
        return [(self.data[offsets[k]:offsets[k + 1]], count) for k, count in enumerate(self.counts)]


def compiled_engine():
    """The compiled module, or None (not built, or `ANALYZER_ENGINE=python`)."""
    if choice.wanted() == "python":
        return None
    try:
        from . import _engine
    except ImportError:
        if choice.wanted() == "compiled":
            raise
        return None
    return _engine


def pack(chunk_counts: Mapping[str, int] | Mapping[bytes, int]) -> Packed:
    """Chunks (str, taken as UTF-8 with surrogate escapes, or bytes) and their counts, laid out
    for the engine (in C when it is built: hundreds of thousands of chunks)."""
    counts = array("q", chunk_counts.values())
    if counts and min(counts) < 1:
        chunk, count = next((chunk, count) for chunk, count in chunk_counts.items() if count < 1)
        raise ValueError(f"chunk {chunk!r} has count {count}; counts are at least 1")
    compiled = compiled_engine()
    if compiled is not None:
        data, offset_bytes = compiled.pack(list(chunk_counts))
        offsets = array("q")
        offsets.frombytes(offset_bytes)
        return Packed(data, offsets, counts)
    pieces = [as_bytes(chunk) for chunk in chunk_counts]
    offsets = array("q", [0])
    total = 0
    for piece in pieces:
        total += len(piece)
        offsets.append(total)
    return Packed(b"".join(pieces), offsets, counts)


def train_packed(packed: Packed, size: int, engine: str | None = None) -> list[bytes]:
    """The vocabulary (each id's string, `##` before a piece inside a chunk) of at most `size`
    entries; `engine` "python" or "compiled" (None: the compiled one when built)."""
    if size < ALPHABET:
        raise ValueError(f"a WordPiece vocabulary needs a size of {ALPHABET} or more (its byte "
                         f"symbols), not {size}")
    compiled = compiled_engine() if engine != "python" else None
    if engine == "compiled" and compiled is None:
        raise ImportError("the compiled WordPiece engine is not built; reinstall with a C compiler")
    if compiled is None:
        return reference.train(dict(packed.items()), size)
    return compiled.train(packed.data, packed.offsets, packed.counts, size)


def train(chunk_counts: Mapping[str, int] | Mapping[bytes, int], size: int,
          engine: str | None = None) -> list[bytes]:
    """`train_packed` on distinct chunks (str or bytes) and how often each occurs."""
    return train_packed(pack(chunk_counts), size, engine)
