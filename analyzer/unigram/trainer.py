"""Train a Unigram vocabulary: the reference's steps in SentencePiece's order, on either engine.

`train` seeds the model, then runs `sub_iterations` EM steps and a pruning round until at
most size x 1.1 pieces remain, and finalizes `size` entries (the 256 bytes and the best longer
pieces). Both engines take the same steps (`analyzer.unigram.reference.Trainer`, the
definition, and the compiled `analyzer.unigram._engine.Trainer`) and give the same pieces,
scores and ids; the compiled one is used when it was built (`ANALYZER_ENGINE` decides as for
BPE), on every core the process may use.

>>> trained = train({"hug": 10, "pug": 5, "hugs": 5}, 260)
>>> trained.pieces[:3], len(trained.pieces), trained.rounds
([b'hug', b'pug', b'g'], 259, 0)
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from analyzer.bpe import choice
from analyzer.bpe.counting import ChunkTable
from analyzer.bpe.packing import as_bytes
from analyzer.bpe.threads import available_cores

from . import reference
from .reference import DESIRED_MARGIN, MAX_PIECE_BYTES, SEED_SIZE, SHRINK, SUB_ITERATIONS

CACHE_LIMIT = 6 << 30
"""Bytes the compiled engine's node cache may take (beyond, each step looks the pieces up)."""
Progress = Callable[[int, int, int], None]
"""progress(round, rounds expected, pieces left): after each round of EM (and before the first)."""


@dataclass(frozen=True)
class Trained:
    pieces: list[bytes]
    """Each id's bytes: ids by score descending, then bytes ascending."""
    scores: list[float]
    rounds: int
    """Pruning rounds run."""
    seeds: int
    """Pieces in the seed model."""
    work: int = field(default=0, compare=False)
    """Steps the compiled engine took (each byte and node a pass visited, each key the seeding
    binned or scanned): what tests of its bound count; 0 from the reference. Not part of the
    vocabulary: two trainings that give the same are equal whatever their work."""


def compiled_engine():
    """The compiled Trainer type, or None (not built, or `ANALYZER_ENGINE=python`)."""
    module = choice.compiled_module(__package__)
    return None if module is None else module.Trainer


Chunks = Mapping[str, int] | Mapping[bytes, int] | ChunkTable
"""Distinct chunks with how often each occurs: a dict (str or bytes), or packed (a
`ChunkTable`: their UTF-8 end to end, offsets and counts, as a training source's tables are
merged; the compiled engine reads its buffers as they are)."""


def make_trainer(chunk_counts: Chunks, max_piece_bytes: int = MAX_PIECE_BYTES,
                 engine: str | None = None, threads: int | None = None,
                 cache_limit: int = CACHE_LIMIT):
    """A Trainer of the engine asked for ("python", "compiled"; None: the compiled one when
    built) over distinct chunks (str or bytes, or a ChunkTable) with their counts; the compiled
    one keeps each chunk's lattice nodes between steps when they may take at most
    `cache_limit` bytes."""
    compiled = compiled_engine() if engine != "python" else None
    if engine == "compiled" and compiled is None:
        raise ImportError("the compiled Unigram engine is not built; reinstall with a C compiler")
    if isinstance(chunk_counts, ChunkTable):
        table = chunk_counts
        if compiled is not None:
            try:
                return compiled(table.data, table.offsets, table.counts, max_piece_bytes,
                                threads or available_cores(), cache_limit)
            except OverflowError:  # counts whose sums could pass 2^63: the reference's do not
                pass
        at = table.offsets
        return reference.Trainer([(table.data[at[k]:at[k + 1]], count)
                                  for k, count in enumerate(table.counts)], max_piece_bytes)
    if compiled is None:  # pairs, not a dict: two str with the same UTF-8 stay two chunks, as
        # the compiled engine gets them (one with surrogate escapes, "\udcc3\udca9", and "é")
        return reference.Trainer([(as_bytes(chunk), count) for chunk, count in chunk_counts.items()],
                                 max_piece_bytes)
    # The chunks end to end, as the engine reads them (no second dict on a gigabyte's chunks).
    offsets = array("q", [0])
    counts = array("q")
    data = bytearray()
    for chunk, count in chunk_counts.items():
        data += as_bytes(chunk)
        offsets.append(len(data))
        counts.append(count)
    try:
        return compiled(data, offsets, counts, max_piece_bytes, threads or available_cores(),
                        cache_limit)
    except OverflowError:  # counts whose sums could pass 2^63: the reference's do not
        return reference.Trainer([(bytes(data[offsets[k]:offsets[k + 1]]), count)
                                  for k, count in enumerate(counts)], max_piece_bytes)


def expected_rounds(pieces: int, size: int, shrink: float = SHRINK) -> int:
    """About how many pruning rounds take `pieces` down to size x 1.1.

    >>> expected_rounds(1_000_000, 32_768)
    12
    """
    desired = int(size * DESIRED_MARGIN)
    if pieces <= desired or shrink <= 0 or shrink >= 1:
        return 0
    return math.ceil(math.log(desired / pieces) / math.log(shrink))


def train(chunk_counts: Chunks, size: int, *,
          max_piece_bytes: int = MAX_PIECE_BYTES, seed_size: int = SEED_SIZE,
          shrink: float = SHRINK, sub_iterations: int = SUB_ITERATIONS,
          progress: Progress | None = None, engine: str | None = None,
          threads: int | None = None, cache_limit: int = CACHE_LIMIT) -> Trained:
    """A Unigram vocabulary of `size` entries (fewer where the text has no more pieces) from
    distinct chunks (str, taken as UTF-8, or bytes, or a ChunkTable) and how often each
    occurs."""
    if size < 256:
        raise ValueError(f"a Unigram vocabulary needs a size of 256 or more (its bytes), not {size}")
    trainer = make_trainer(chunk_counts, max_piece_bytes, engine, threads, cache_limit)
    trainer.seed(seed_size)
    seeds = len(trainer)
    desired = int(size * DESIRED_MARGIN)
    rounds = 0
    while True:
        if progress:
            progress(rounds, rounds + expected_rounds(len(trainer), size, shrink), len(trainer))
        for _ in range(sub_iterations):
            trainer.em()
        if len(trainer) <= desired:
            break
        before = len(trainer)
        trainer.prune(desired, shrink)
        rounds += 1
        if len(trainer) >= before:  # nothing could go: more rounds would change nothing
            break
    pieces, scores = trainer.finalize(size)
    if progress:
        progress(rounds, rounds, len(pieces))
    return Trained(pieces, scores, rounds, seeds, getattr(trainer, "work", 0))
