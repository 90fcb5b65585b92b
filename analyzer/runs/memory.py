"""Training memory, predicted before training: a run that would not fit is refused with the
figure and the ways out, never killed by the kernel halfway.

A BPE training from a source's chunk-count tables holds, at its peak, a few bytes per byte of
the distinct chunks' text and a few per distinct chunk (the engine's token and position arrays,
the Python side's per-chunk arrays), measured by `benchmarks/bench_memory.py` and written in
`BPE_COST`. The chunks and their bytes are read from the tables (after the count floor,
`min_chunk_count`), so the prediction costs no training. It is compared with what this process
may have: the smallest of its cgroup's limit (less what the group already uses), its
address-space limit (`ulimit -v`), the memory the machine has available (MemAvailable) and
`ANALYZER_MEMORY` (a limit of one's own: `16G`).

>>> BPE_COST.peak(chunks=1_000_000, n_bytes=20_000_000) > 200_000_000
True
"""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from analyzer.errors import Invalid
from analyzer.settings import byte_size, bytes_written

from .plan import JobPlan, pretokenizer_name

MEMORY_ENV = "ANALYZER_MEMORY"
"""A limit of one's own on what a run's trainings may use (bytes, `16G`, `500M`)."""

FLOORS = (2, 3, 5, 10, 20, 50, 100)
"""The count floors a refusal tries, smallest first, to offer the least that fits."""


@dataclass(frozen=True)
class EngineCost:
    """A training's peak resident memory as `fixed + per_byte * bytes + per_chunk * chunks`
    of the distinct chunks it trains on (fitted on generated text in 58 languages)."""

    per_byte: float
    per_chunk: float
    fixed: int
    least: int = 0
    """What a run takes whatever it trains (the interpreter, the corpus measured): small
    trainings need no more than the run itself (`at_once`)."""

    def peak(self, chunks: int, n_bytes: int) -> int:
        return int(self.fixed + self.per_byte * n_bytes + self.per_chunk * chunks)


BPE_COST = EngineCost(per_byte=8.2, per_chunk=34.0, fixed=500_000_000, least=800_000_000)
"""The compiled BPE engine trained from tables, whole process (see the module's docstring).

Measured (issue 54, the lean engine) on text from `benchmarks/textgen.py`, 58 languages, o200k's
split, a shared vocabulary to 131,072, VmHWM of a fresh process training from the cached
tables: 1 GB of text (14.0M distinct chunks, 282.5 MB of distinct chunk bytes) peaks at
3,112 MB; its first quarter (4.51M chunks, 82.2 MB) at 1,250 MB. The two sizes have nearly
the same bytes per chunk, so they cannot tell the two rates apart: `per_chunk` is the engine's
own (each chunk's start, group and training weight in int64 on the Python side, its weight in
uint32 in the engine, and its separator's slot: 34 bytes), and `per_byte` and `fixed` are
fitted to the two peaks. Per byte: `tok` (4), the LEB128 position lists (about 1.5 at the
start), the laid-out bytes (1), and the lists, pair table and heap that the merges and the
late rescans add. Before (the engine of issue 39): 15.5 per byte and 72 per chunk (5,544 MB
and 1,921 MB at those sizes); the 10 GB source's 82M chunks and 2 GB of chunk bytes come to
about 19.6 GB now, 37 GB then.

Checked against whole runs (`benchmarks/bench_memory.py`: a run in a fresh process, the
counting pass cached, measured on NTREX-128): 256 MB predicted 1.36 GB, peaked 1.33 (+2%);
1 GB 3.29 and 3.18 (+4%); 10 GB (82,299,206 chunks, 2.05 GB of their text) 20.1 and 21.2 (-5%);
1 GB under count floors 2 and 5 (3.0M and 0.8M chunks), 0.84 and 0.82 GB: the run's own
(`least`)."""


@dataclass(frozen=True)
class TableStats:
    """A chunk-count table's distinct chunks and their bytes, and those its count floor keeps."""

    chunks: int
    n_bytes: int
    kept_chunks: int
    kept_bytes: int

    def __add__(self, other: TableStats) -> TableStats:
        return TableStats(self.chunks + other.chunks, self.n_bytes + other.n_bytes,
                          self.kept_chunks + other.kept_chunks, self.kept_bytes + other.kept_bytes)


NO_CHUNKS = TableStats(0, 0, 0, 0)


def table_stats(path: Path, min_count: int = 1) -> TableStats:
    """A cached table's chunks and bytes, and those counted `min_count` times or more."""
    return floors(path, (min_count,))[min_count]


def floors(path: Path, candidates: tuple[int, ...] = FLOORS) -> dict[int, TableStats]:
    """`table_stats` at each candidate floor, the file read once."""
    with pa.memory_map(str(path)) as source:
        arrow = ipc.open_file(source).read_all()
        chunks = arrow.column("chunk").combine_chunks()
        offsets = np.frombuffer(chunks.buffers()[1], np.int64)[chunks.offset:
                                                                 chunks.offset + len(chunks) + 1]
        lengths = np.diff(offsets)
        counts = arrow.column("count").to_numpy()
        total = int(lengths.sum())
        found = {}
        for floor in candidates:
            kept = counts >= floor
            found[floor] = TableStats(len(counts), total, int(kept.sum()), int(lengths[kept].sum()))
        return found


@dataclass(frozen=True)
class MemoryLimit:
    """What a process may use, in bytes, and what says so."""

    n_bytes: int
    what: str


def memory_limit(env: Mapping[str, str] | None = None, proc: Path = Path("/proc"),
                 cgroups: Path = Path("/sys/fs/cgroup")) -> MemoryLimit | None:
    """The least of the limits this process has (None: none could be read). The paths are
    parameters so that tests can give their own files."""
    env = os.environ if env is None else env
    found: list[MemoryLimit] = []
    if env.get(MEMORY_ENV):
        number = bytes_written(env[MEMORY_ENV])
        if number is None or not 1 <= number < 2**63:
            raise Invalid(f"{MEMORY_ENV}={env[MEMORY_ENV]!r}: write a number of bytes, e.g. 16G, "
                          "500M or 1000000")
        found.append(MemoryLimit(int(number), f"{MEMORY_ENV}={env[MEMORY_ENV]}"))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        found.append(MemoryLimit(soft, "the address-space limit (ulimit -v)"))
    group = _cgroup_room(proc, cgroups)
    if group is not None:
        found.append(group)
    available = _meminfo(proc / "meminfo", "MemAvailable")
    if available is not None:
        found.append(MemoryLimit(available, "the memory this machine has available"))
    return min(found, key=lambda limit: limit.n_bytes) if found else None


def _meminfo(path: Path, field: str) -> int | None:
    """A field of /proc/meminfo, in bytes."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == field:
                kib = int(value.split()[0])
                return kib * 1024 if kib >= 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room(proc: Path, cgroups: Path) -> MemoryLimit | None:
    """What this process's cgroup (v2, or v1's memory controller) still allows: its limit less
    what the group uses now; None without a limit."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:  # a blank or unknown line: not one of a cgroup's
            continue
        _, controllers, where = parts
        if controllers == "":  # v2: one hierarchy
            folder = cgroups / where.lstrip("/")
            limit, used = _read_int(folder / "memory.max"), _read_int(folder / "memory.current")
        elif "memory" in controllers.split(","):
            folder = cgroups / "memory" / where.lstrip("/")
            limit = _read_int(folder / "memory.limit_in_bytes")
            used = _read_int(folder / "memory.usage_in_bytes")
        else:
            continue
        if limit is not None and 0 <= limit < 2**60:  # v1 writes "no limit" as a huge number
            return MemoryLimit(max(0, limit - (used or 0)),
                               f"the cgroup's memory limit ({byte_size(limit)}, "
                               f"{byte_size(used or 0)} in use)")
    return None


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):  # missing, or "max"
        return None



@dataclass(frozen=True)
class JobMemory:
    """A BPE job's predicted peak: what it trains on (after the count floor) and the figure."""

    label: str
    stats: TableStats
    predicted: int


def predict_jobs(plans: list[JobPlan], floor: int | None = None,
                 read: dict[str, dict[int, TableStats]] | None = None) -> list[JobMemory]:
    """Each BPE job that trains on a source's tables, its peak predicted from them (at the run's
    count floor, or at `floor`); the other algorithms' jobs are not predicted. `read` keeps each
    table's figures between calls."""
    read = {} if read is None else read
    found = []
    for plan in plans:
        if plan.source is None or not plan.kind.has_merges:
            continue
        at = max(plan.source.min_count, floor or 1)
        total = NO_CHUNKS
        for lang in plan.train_on:
            path = plan.source.tables[(lang, pretokenizer_name(plan.pretokenizer))]
            if at not in read.setdefault(path, {}):
                read[path].update(floors(Path(path), (at, *FLOORS)))
            total += read[path][at]
        found.append(JobMemory(plan.label, total,
                               BPE_COST.peak(total.kept_chunks, total.kept_bytes)))
    return found


def at_once(jobs: list[JobMemory], workers: int) -> int:
    """The most memory the jobs need together: the pool runs the biggest first, `workers` at a
    time, so at worst the `workers` biggest run side by side."""
    biggest = sorted((job.predicted for job in jobs), reverse=True)[:max(1, workers)]
    return max(BPE_COST.least, sum(biggest))


class TooLittleMemory(Invalid):
    """A run's trainings would need more memory than the process may have."""


def check_memory(plans: list[JobPlan], workers: int, limit: MemoryLimit | None,
                 stage=None, cached: bool = True, cluster: bool = False) -> list[JobMemory]:
    """Say the predicted peak (`stage`), and refuse the run (TooLittleMemory) before any training
    when it is more than `limit`, with the figure and the ways out: the least count floor that
    fits (computed from the tables), a smaller sample, fewer jobs at once, a bigger machine.
    `cached`: the counted chunks are kept in the cache (else a rerun reads the text again).
    `cluster`: the jobs run on Dask workers, `workers` at once on each (its threads), which
    --jobs does not change."""
    read: dict[str, dict[int, TableStats]] = {}
    jobs = predict_jobs(plans, read=read)
    if not jobs:
        return jobs
    needed = at_once(jobs, workers)
    together = min(workers, len(jobs))
    biggest = max(jobs, key=lambda job: job.predicted)
    need, room = _apart(needed, limit.n_bytes if limit else needed)
    said = (f"training needs about {need} at its peak ("
            + ("what any run takes, whatever it trains; "
               if needed > sum(sorted((job.predicted for job in jobs), reverse=True)[:together])
               else "")
            + (f"{together} jobs at once; " if together > 1 else "")
            + f"the largest, {biggest.label}, trains on {biggest.stats.kept_chunks:,} distinct "
            f"chunks, {byte_size(biggest.stats.kept_bytes)} of text)")
    if limit is None or needed <= limit.n_bytes:
        if stage is not None:
            stage(said + (f", of {room} it may have" if limit else ""))
        return jobs
    raise TooLittleMemory(
        f"{said[0].upper()}{said[1:]}, more than {room}: {limit.what}. "
        "Refused before training, so nothing is lost"
        + (": the counted chunks are cached, and a rerun with other settings of training "
           "(a count floor, fewer jobs) does not read the text again" if cached
           else " (with --no-cache, a rerun reads the text again)")
        + ". Ways out: "
        + "; ".join(_ways_out(plans, jobs, workers, limit, read, cluster)) + ".")


def _apart(need: int, room: int) -> tuple[str, str]:
    """Two sizes written with enough digits that a need above the room does not read as the
    same figure ("1.1 GB, more than 1.1 GB").

    >>> _apart(1_150_000_000, 1_100_000_000), _apart(1_200_000_000, 500_000_000)
    (('1.15 GB', '1.10 GB'), ('1.2 GB', '500.0 MB'))
    """
    said = byte_size(need), byte_size(room)
    if said[0] != said[1] or need == room:
        return said
    unit, scale = next((unit, scale) for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6),
                                                         ("kB", 1e3), ("B", 1))
                       if max(need, room) >= scale)
    for digits in (2, 3):
        said = f"{need / scale:.{digits}f} {unit}", f"{room / scale:.{digits}f} {unit}"
        if said[0] != said[1]:
            break
    return said


def _ways_out(plans: list[JobPlan], jobs: list[JobMemory], workers: int, limit: MemoryLimit,
              read: dict[str, dict[int, TableStats]], cluster: bool = False) -> list[str]:
    """What would bring a run's trainings under `limit`, each with its figure: only ways that
    fit (a rerun that follows one is not refused again), but for the last, more memory."""
    ways = []
    room = limit.n_bytes
    current = max(plan.source.min_count for plan in plans if plan.source is not None)
    fitting = [(floor, need) for floor in FLOORS if floor > current
               for need in [at_once(predict_jobs(plans, floor, read), workers)] if need <= room]
    if fitting:
        floor, need = fitting[0]
        ways.append(f"train on the chunks seen at least {floor} times (--min-chunk-count "
                    f"{floor}: about {byte_size(need)})")
    needed = at_once(jobs, workers)
    # each job at once is a process of its own, with its own fixed part: only the rest shrinks
    # with the sample
    fixed = BPE_COST.fixed * min(workers, len(jobs))
    share = (room - fixed) / max(1, needed - fixed)
    source = next(plan.source for plan in plans if plan.source is not None)
    sample = sum(source.bytes_by_language.values())
    if 0 < share < 1 and sample and room >= BPE_COST.least:  # below `least`, no sample fits
        ways.append(f"a smaller sample (--train-bytes {byte_size(sample * share * 0.8).replace(' ', '')} or "
                    "less, a sample counted afresh, so that run reads the text again: distinct "
                    "chunks grow more slowly than the text, so read the prediction it prints)")
    if workers > 1 and len(jobs) > 1 and at_once(jobs, 1) < needed and at_once(jobs, 1) <= room:
        ways.append(f"one job at a time on each worker (workers of one thread, dask worker "
                    f"--nthreads 1: about {byte_size(at_once(jobs, 1))})" if cluster else
                    f"one job at a time (--jobs 1: about {byte_size(at_once(jobs, 1))})")
    more = byte_size(needed * 1.15)
    if limit.what.startswith(MEMORY_ENV):
        ways.append(f"a higher limit of your own ({MEMORY_ENV}={more.replace(' ', '')} or more), "
                    "on a machine that has it")
    else:
        ways.append(f"a machine with {more} or more (with --scheduler, the Dask worker that "
                    "trains)")
    return ways
