"""Train a WordPiece vocabulary, as Hugging Face's `WordPieceTrainer` does, on either engine.

Both engines take the same steps (`analyzer.wordpiece.reference`, the definition, and the
compiled `analyzer.wordpiece._engine`) and give the same vocabulary; the compiled one is used
when it was built (`ANALYZER_ENGINE` decides as for BPE). The input is the chunks' bytes end to
end with offsets and counts (a `ChunkTable`), as a run's training input gives them; `train` packs
a dict of chunks and counts first.

>>> train({"hug": 10, "pug": 5, "hugs": 5}, 516)[512:]
[b'##ug', b'hug', b'pug', b'hugs']
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping

from analyzer.bpe import choice
from analyzer.bpe.counting import ChunkTable
from analyzer.bpe.packing import as_bytes

from . import reference
from .reference import ALPHABET


def chunks_of(table: ChunkTable) -> dict[bytes, int]:
    """A table's chunks (as bytes) with their counts (a chunk there twice: summed), for the
    reference.

    >>> chunks_of(pack({"ab": 2, "c": 1}))
    {b'ab': 2, b'c': 1}
    """
    offsets = table.offsets
    chunks: dict[bytes, int] = {}
    for k, count in enumerate(table.counts):  # a chunk twice (two str with the same UTF-8,
        chunk = table.data[offsets[k]:offsets[k + 1]]  # one with surrogate escapes) is summed,
        chunks[chunk] = chunks.get(chunk, 0) + count   # as the engine's pair counts sum it
    return chunks


def compiled_engine():
    """The compiled module, or None (not built, or `ANALYZER_ENGINE=python`)."""
    return choice.compiled_module(__package__)


def pack(chunk_counts: Mapping[str, int] | Mapping[bytes, int]) -> ChunkTable:
    """Distinct chunks (str, taken as UTF-8 with surrogate escapes, or bytes) and their counts
    as the table a run's training input gives (`analyzer.bpe.counting.ChunkTable`), laid out in
    C when the engine is built (hundreds of thousands of chunks).

    >>> pack({"ab": 2, "c": 1}).offsets.tolist()
    [0, 2, 3]
    """
    counts = array("q", chunk_counts.values())  # (another library's integers: their __index__)
    if counts and min(counts) < 1:
        chunk, count = next((chunk, count) for chunk, count in chunk_counts.items() if count < 1)
        raise ValueError(f"chunk {chunk!r} has count {count}; counts are at least 1")
    firsts = array("q", range(len(counts)))  # each chunk's order: as given
    compiled = compiled_engine()
    if compiled is not None:
        data, offset_bytes = compiled.pack(list(chunk_counts))
        offsets = array("q")
        offsets.frombytes(offset_bytes)
        return ChunkTable(data, offsets, counts, firsts)
    pieces = [as_bytes(chunk) for chunk in chunk_counts]
    offsets = array("q", [0])
    total = 0
    for piece in pieces:
        total += len(piece)
        offsets.append(total)
    return ChunkTable(b"".join(pieces), offsets, counts, firsts)


def train_packed(packed: ChunkTable, size: int, engine: str | None = None) -> list[bytes]:
    """The vocabulary (each id's string, `##` before a piece inside a chunk) of at most `size`
    entries; `engine` "python" or "compiled" (None: the compiled one when built)."""
    if size < ALPHABET:
        raise ValueError(f"a WordPiece vocabulary needs a size of {ALPHABET} or more (its byte "
                         f"symbols), not {size}")
    compiled = compiled_engine() if engine != "python" else None
    if engine == "compiled" and compiled is None:
        raise ImportError("the compiled WordPiece engine is not built; reinstall with a C compiler")
    if compiled is None:
        return reference.train(chunks_of(packed), size)
    try:  # ids are below 2^31, so a larger size asks for nothing more
        return compiled.train(packed.data, packed.offsets, packed.counts, min(size, 2**31 - 1))
    except OverflowError:  # counts whose sums could pass 2^63: Python's integers do not wrap
        return reference.train(chunks_of(packed), size)


def train(chunk_counts: Mapping[str, int] | Mapping[bytes, int], size: int,
          engine: str | None = None) -> list[bytes]:
    """`train_packed` on distinct chunks (str or bytes) and how often each occurs."""
    return train_packed(pack(chunk_counts), size, engine)
