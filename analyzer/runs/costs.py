"""What each engine's training adds to its process at its peak, measured: the model a run's
memory is predicted with (`analyzer.runs.memory`) before anything is trained.

A training from a source's chunk-count tables grows the process it runs in by `fixed +
per_byte * bytes + per_chunk * chunks` of the distinct chunks it trains on (after the count
floor), in resident memory (what cgroups and MemAvailable bound); and in address space (what
`ulimit -v` bounds) by its own three figures, plus a stack and a malloc arena (64 MiB of
address space, mostly never touched) for each thread it starts. Each kind of job names the
costs of its stages (its builder's `stages(plan)`): SuperBPE's two stages run one after the
other, so the larger is its peak.

The figures are fitted by `benchmarks/bench_memory.py`, which trains each kind of job in a
process of its own forked as the local pool forks it, on generated text at several sizes and
two shapes (random words: short chunks, each seen about once; Thai and Chinese: long chunks),
and records its growth in resident memory (VmHWM less VmRSS at its start) and in address
space (the largest VmSize seen less VmSize at its start). The figures and the table of
measured peaks against predictions are in docs/tutorials/training-sources.md.

>>> TABLES.resident(chunks=1_000_000, n_bytes=20_000_000) > 100_000_000
True
"""

from __future__ import annotations

from dataclasses import dataclass

ARENA = 64 << 20
"""The address space glibc's malloc maps for each thread's arena (HEAP_MAX_SIZE, 64-bit)."""

MEASURED_ON = 2
"""The cores the figures were measured on: an engine that starts a thread per core maps a
stack and an arena more for each core beyond."""


@dataclass(frozen=True)
class EngineCost:
    """What one engine's training adds to its process (see the module's docstring)."""

    name: str
    per_byte: float
    per_chunk: float
    fixed: int
    address_per_byte: float
    address_per_chunk: float
    address_fixed: int
    threads: bool = False
    """It starts a thread per core (each a stack and an arena of address space)."""

    def resident(self, chunks: int, n_bytes: int) -> int:
        return int(self.fixed + self.per_byte * n_bytes + self.per_chunk * chunks)

    def address(self, chunks: int, n_bytes: int, threads: int = 1, stack: int = 8 << 20) -> int:
        started = max(0, threads - MEASURED_ON) if self.threads else 0
        return int(self.address_fixed + self.address_per_byte * n_bytes
                   + self.address_per_chunk * chunks + started * (stack + ARENA))


TABLES = EngineCost("BPE from the tables", per_byte=8.2, per_chunk=34.0, fixed=100_000_000,
                    address_per_byte=8.2, address_per_chunk=34.0, address_fixed=200_000_000)
"""The compiled BPE engine on a source's tables laid out as bytes (no object per chunk): the
shared vocabulary, a language's own, SuperBPE's first stage."""

LISTED = EngineCost("BPE from a list of chunks", per_byte=8.2, per_chunk=120.0,
                    fixed=100_000_000, address_per_byte=8.2, address_per_chunk=120.0,
                    address_fixed=200_000_000)
"""The BPE engine on chunks made Python strings one by one: parity-aware training (its dev
texts beside), `analyzer train`."""

CONTINUED = EngineCost("BPE continued from a base", per_byte=20.0, per_chunk=200.0,
                       fixed=100_000_000, address_per_byte=20.0, address_per_chunk=200.0,
                       address_fixed=200_000_000)
"""BPE on chunks encoded by a base first (a Python list of ids per chunk): SuperBPE's second
stage (its own pre-tokenizer's tables)."""

EXTENDED = EngineCost("BPE extending a production tokenizer", per_byte=20.0, per_chunk=200.0,
                      fixed=300_000_000, address_per_byte=20.0, address_per_chunk=200.0,
                      address_fixed=400_000_000)
"""An extension: the base's library encodes each chunk (the base loaded), then BPE continues
on its ids; made in the command's own process, after the jobs."""

UNIGRAM = EngineCost("Unigram", per_byte=30.0, per_chunk=60.0, fixed=200_000_000,
                     address_per_byte=30.0, address_per_chunk=60.0, address_fixed=300_000_000,
                     threads=True)
"""The Unigram engine on the tables merged into one packed table."""

WORDPIECE = EngineCost("WordPiece", per_byte=30.0, per_chunk=60.0, fixed=100_000_000,
                       address_per_byte=30.0, address_per_chunk=60.0, address_fixed=200_000_000,
                       threads=True)
"""The WordPiece engine on the tables merged into one packed table."""
