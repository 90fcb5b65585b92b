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

from analyzer.headroom import ARENA

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
    per_entry: float = 0.0
    address_per_entry: float = 0.0
    """For each entry it learns (a merge, a piece): the deeper a training goes, the more pairs
    it keeps (BPE's count floor falls) and the more it tracks."""

    def resident(self, chunks: int, n_bytes: int, entries: int = 0) -> int:
        return int(self.fixed + self.per_byte * n_bytes + self.per_chunk * chunks
                   + self.per_entry * entries)

    def address(self, chunks: int, n_bytes: int, entries: int = 0, threads: int = 1,
                stack: int = 8 << 20) -> int:
        started = max(0, threads - MEASURED_ON) if self.threads else 0
        return int(self.address_fixed + self.address_per_byte * n_bytes
                   + self.address_per_chunk * chunks + self.address_per_entry * entries
                   + started * (stack + ARENA))


@dataclass(frozen=True)
class Stage:
    """A part of a training, as its builder names it: an engine's cost over the tables of a
    pre-tokenizer (`plan.pretokenizer_name`), to a number of entries (merges, pieces)."""

    cost: EngineCost
    tables: str
    entries: int


READ = EngineCost("reading a table", per_byte=3.0, per_chunk=80.0, fixed=60_000_000,
                  address_per_byte=3.0, address_per_chunk=80.0, address_fixed=60_000_000)
"""What a job holds while it reads one language's table whole, before its count floor leaves
the chunks it trains on (the file mapped, its columns copied and checked): of the largest
table it reads. Under a floor that keeps little, this, not training, is a job's peak (random
words: 3.45M chunks, 26 MB, read to train on 0.1 MB: 389 MB; Thai, 0.5M chunks, 16 MB: 141
MB, its pages of its own, clean ones of the mapped file counted)."""

TABLES = EngineCost("BPE from the tables", per_byte=9.9, per_chunk=0.0, fixed=295_000_000,
                    address_per_byte=9.9, address_per_chunk=0.0, address_fixed=395_000_000)
"""The compiled BPE engine on a source's tables laid out as bytes (no object per chunk): the
shared vocabulary, a language's own, SuperBPE's first stage. Covers 29 jobs of ours (random
words 7.5-52 MB of distinct chunk text, 1.0-6.9M chunks; Thai and Chinese 7.2-32 MB, 0.25-1.0M
chunks; to 4,096 and 32,768) and issue 54's whole runs at 131,072 (256 MB, 1 GB and 10 GB of
generated text in 58 languages: 82.3M chunks, 2.05 GB of their text, 20.45 GB added), the
largest exactly. Thai costs more per byte than Latin words (a third more at 32 MB): the
figure per byte is Thai's, and the small jobs of Latin words are over-predicted by up to
2.5x (their fixed part)."""

LISTED = EngineCost("BPE from a list of chunks", per_byte=20.5, per_chunk=32.5,
                    fixed=120_000_000, address_per_byte=23.8, address_per_chunk=1.5,
                    address_fixed=150_000_000)
"""The BPE engine on chunks made Python strings one by one (a str object each, then packed):
parity-aware training (its dev texts beside), `analyzer train`. Measured to 4,096 only."""

CONTINUED = EngineCost("BPE continued from a base", per_byte=33.4, per_chunk=0.0,
                       fixed=70_000_000, address_per_byte=11.5, address_per_chunk=1700.0,
                       address_fixed=5_000_000, per_entry=3450.0, address_per_entry=6000.0)
"""BPE on chunks encoded by a base first (a Python list of ids per chunk, about 40 bytes an
id): SuperBPE's second stage, on its own pre-tokenizer's tables (a chunk a phrase or a line),
its entries the merges after the transition."""

EXTENDED = EngineCost("BPE extending a production tokenizer", per_byte=12.5, per_chunk=423.0,
                      fixed=65_000_000, address_per_byte=10.7, address_per_chunk=411.0,
                      address_fixed=170_000_000, threads=True)
"""An extension: the base's library encodes each chunk (a Python list of ids each), then BPE
continues on the ids; made in the command's own process, after the jobs, with the base
loaded already; then the base's library counts every measured unit on a thread per core
(`formats.tiktoken_ids`; tiktoken's own default, 8 threads, mapped 430 MB more, which this
figure held before). Its fixed address space is the two counting threads' stacks and arenas
(144 MB, which the benchmark's 5 ms polls can miss) and 26 MB. Measured to +1,024 only; the
address figures refitted on Thai and Chinese (75k and 376k chunks: 97 and 407 MB) and
checked against the earlier random words (1.0-6.9M chunks), which they cover."""

UNIGRAM = EngineCost("Unigram", per_byte=42.7, per_chunk=0.0, fixed=270_000_000,
                     address_per_byte=60.8, address_per_chunk=0.0, address_fixed=205_000_000,
                     threads=True)
"""The Unigram engine on the tables merged into one packed table: its seeds (a million at most)
and the lattice nodes of every chunk, which grow with the bytes (Thai and Chinese's most: the
figure per byte is theirs; Latin words are over-predicted by about 60%). The same at 4,096 and
32,768 entries."""

WORDPIECE = EngineCost("WordPiece", per_byte=11.0, per_chunk=102.5, fixed=65_000_000,
                       address_per_byte=11.3, address_per_chunk=70.0, address_fixed=70_000_000,
                       threads=True, per_entry=7820.0, address_per_entry=9330.0)
"""The WordPiece engine on the tables merged into one packed table; it grows with the pieces
it learns (+55% from 4,096 to 32,768 on 18 MB of words)."""

COUNTED = EngineCost("what counting a sample leaves", per_byte=0.0, per_chunk=140.0,
                     fixed=5_000_000, address_per_byte=0.0, address_per_chunk=140.0,
                     address_fixed=(MEASURED_ON + 1) * (ARENA + (8 << 20)), threads=True)
"""What a run that counts its sample afresh holds beyond one that takes it from the chunk-count
cache, once counting is done: the counting threads' malloc arenas, kept with what was freed in
them (each distinct chunk of every table counted, of every pre-tokenizer), and their address
space (an arena and a stack a counting thread, and one for the thread that writes the tables).
A smaller sample offered by a refusal is counted afresh, so it is checked with this added to
what the refused run holds. Measured on random words (gpt2 and o200k_base's tables, two
cores): 16k to 174k chunks counted left 3.6 to 27 MB more resident, up to 151 MB more mapped."""


@dataclass(frozen=True)
class LocalTraining:
    """A training a local builder makes in the command's own process: its label, the
    languages it trains on and its stages."""

    label: str
    languages: list[str]
    stages: list[Stage]
