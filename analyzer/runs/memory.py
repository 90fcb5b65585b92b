"""Training memory, predicted before training: a run that would not fit is refused with the
figure and the ways out, never killed by the kernel (or stopped by a MemoryError) halfway.

Each job's builder names what its training costs (`stages(plan)`: an engine's measured cost,
`analyzer.runs.costs`, over the tables of a pre-tokenizer, per stage); a local builder (an
extension, made in the command's own process after the jobs) names its own
(`local_costs(run)`). The distinct chunks and bytes each stage trains on are read from the
source's tables (after the count floor, `min_chunk_count`), so the prediction costs no
training. Like is compared with like (`analyzer.headroom`):

- resident memory: what this run holds now, plus what the jobs that run side by side add,
  against the total every cgroup the process is in, MemAvailable and `ANALYZER_MEMORY` leave it;
- address space, per process: what this process maps now (a job's process starts with it),
  plus what the largest job adds (threads' stacks and arenas included), against `ulimit -v`.

A refusal offers only ways out that are themselves predicted to fit (a count floor that keeps
a chunk of every table, one job at a time, both, a smaller sample), and more memory last.

>>> costs.TABLES.resident(chunks=1_000_000, n_bytes=20_000_000) > 100_000_000
True
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from analyzer.bpe.packing import as_bytes
from analyzer.bpe.pretokenize import Splitter
from analyzer.bpe.threads import available_cores
from analyzer.errors import Invalid, setting
from analyzer.headroom import ARENA, MEMORY_ENV, Headroom, Limit, short_of_memory, stack_size
from analyzer.settings import byte_size

from . import costs
from .chunk_cache import SERIAL
from .costs import LocalTraining, Stage
from .plan import JobPlan, SourceTables
from .registry import Hooks, builder_of, hook

__all__ = ["FLOORS", "MEMORY_ENV", "Headroom", "JobMemory", "Limit",
           "TableStats", "TooLittleMemory", "check_memory", "floors", "needed", "predict_jobs",
           "check_texts", "ran_out", "table_stats", "wrapped"]

MARGIN = 0.02
"""A way out is offered if it fits this share below each limit: what a run holds before
training varies from one process to the next (a smaller sample offered to within 0.3 MB of
`ANALYZER_MEMORY` was refused again once followed, in CI)."""

FLOORS = (2, 3, 5, 10, 20, 50, 100)
"""The count floors a refusal tries, smallest first, to offer the least that fits."""

WIDTH = 78
"""A refusal's lines: at most this wide, its first line 16 shorter (what prints before it:
`Error: `, `run 1234 failed: `)."""


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


def _lengths_and_counts(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A cached table's chunks' lengths in bytes and their counts."""
    with pa.memory_map(str(path)) as source:
        arrow = ipc.open_file(source, options=SERIAL).read_all()
        chunks = arrow.column("chunk").combine_chunks()
        offsets = np.frombuffer(chunks.buffers()[1], np.int64)[chunks.offset:
                                                                 chunks.offset + len(chunks) + 1]
        return np.diff(offsets), arrow.column("count").to_numpy().copy()


def floors(path: Path, candidates: tuple[int, ...] = FLOORS) -> dict[int, TableStats]:
    """`table_stats` at each candidate floor, the file read once."""
    lengths, counts = _lengths_and_counts(path)
    total = int(lengths.sum())
    found = {}
    for floor in candidates:
        kept = counts >= floor
        found[floor] = TableStats(len(counts), total, int(kept.sum()), int(lengths[kept].sum()))
    return found


class Tables:
    """The source's tables' figures, each file read once: at a count floor, and (a smaller
    sample) the distinct chunks and bytes a sample taking each document with probability `share`
    is expected to keep: a chunk counted c times is kept unless none of its occurrences is
    taken, `1 - (1 - share)^c` (at most: occurrences in one document go together)."""

    def __init__(self):
        self._floors: dict[str, dict[int, TableStats]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def at(self, path: str, floor: int) -> TableStats:
        if floor not in self._floors.setdefault(path, {}):
            self._floors[path].update(floors(Path(path), tuple(sorted({floor, 1, *FLOORS}))))
        return self._floors[path][floor]

    def sampled(self, path: str, share: float) -> TableStats:
        if path not in self._arrays:
            self._arrays[path] = _lengths_and_counts(Path(path))
        lengths, counts = self._arrays[path]
        kept = -np.expm1(counts * math.log1p(-share)) if share < 1 else np.ones(len(counts))
        chunks, n_bytes = float(kept.sum()), float((kept * lengths).sum())
        whole = self.at(path, 1)
        return TableStats(whole.chunks, whole.n_bytes, math.ceil(chunks), math.ceil(n_bytes))


@dataclass(frozen=True)
class JobMemory:
    """What a job (or a local training) adds to the process it runs in at its peak, and what
    its largest stage trains on (after the count floor)."""

    label: str
    stats: TableStats
    resident: int
    address: int
    local: bool = False
    """Made in the command's own process, after the jobs (an extension)."""
    stages: tuple[tuple[str, TableStats, int], ...] = ()
    """Each stage's engine (`EngineCost.name`), what it trains on and the entries it learns."""


def _stages(plan: JobPlan) -> list[Stage] | None:
    """The stages of a job's training, as its builder names them, or as `Hooks.stages` does
    for a builder that names none (None: not predicted)."""
    try:
        builder = builder_of(plan.kind)
    except LookupError:  # no builder here (a plug-in's kind, registered where its jobs run)
        return Hooks.stages(plan)
    return hook(builder, "stages", Hooks.stages)(plan)


def _job(label: str, languages: Sequence[str], stages: list[Stage],
         measure: Callable[[str, str], TableStats], threads: int, local: bool) -> JobMemory:
    """A training's figures: its largest stage, in resident memory and address space."""
    found = []
    stack = stack_size()
    read = NO_CHUNKS  # the largest table read whole (before the count floor)
    for stage in stages:
        total = NO_CHUNKS
        for lang in languages:
            table = measure(lang, stage.tables)
            total += table
            read = max(read, table, key=lambda stats: costs.READ.resident(stats.chunks,
                                                                          stats.n_bytes))
        entries = max(0, stage.entries)
        found.append((stage.cost.resident(total.kept_chunks, total.kept_bytes, entries),
                      stage.cost.address(total.kept_chunks, total.kept_bytes, entries, threads,
                                         stack), total, stage.cost.name, entries))
    largest = max(found, key=lambda item: item[0])
    return JobMemory(_shown(label), largest[2],
                     max(largest[0], costs.READ.resident(read.chunks, read.n_bytes)),
                     max([costs.READ.address(read.chunks, read.n_bytes),
                          *(item[1] for item in found)]),
                     local, tuple((item[3], item[2], item[4]) for item in found))


Measure = Callable[[str, str], TableStats]
"""A language's table's figures under a pre-tokenizer (by its name)."""


def corpus_tables(texts: dict[str, list[str]], units: Sequence[int],
                  splitters: dict[str, Splitter | None]) -> Measure:
    """What a run that trains on the corpus's own units (`units` of each language's `texts`)
    trains on: each language's distinct chunks under each pre-tokenizer (by name, in
    `splitters`), cut when first asked for. A corpus is measured whole, so it is small beside
    a training source; cutting it is a fraction of what training it takes."""
    from analyzer.bpe import distinct_chunks

    found: dict[tuple[str, str], TableStats] = {}

    def measure(lang: str, name: str) -> TableStats:
        if (lang, name) not in found:
            taken = [texts[lang][unit] for unit in units]
            splitter = splitters.get(name)
            chunks = distinct_chunks(taken, splitter)[0] if splitter is not None else \
                list(dict.fromkeys(taken))
            n_bytes = sum(len(as_bytes(chunk)) for chunk in chunks)
            found[(lang, name)] = TableStats(len(chunks), n_bytes, len(chunks), n_bytes)
        return found[(lang, name)]
    return measure


def corpus_bound(texts: dict[str, list[str]], units: Sequence[int]) -> Measure:
    """`corpus_tables` at most, without cutting: no more distinct chunks, nor bytes of them,
    than the language's training text has bytes."""
    sizes = {lang: sum(len(as_bytes(by_unit[unit])) for unit in units)
             for lang, by_unit in texts.items()}
    return lambda lang, name: TableStats(*[sizes[lang]] * 4)


def predict_jobs(plans: list[JobPlan], source: SourceTables | None = None,
                 floor: int | None = None, tables: Tables | None = None,
                 local: Sequence[LocalTraining] = (), workers: int = 1,
                 share: dict[str, float] | None = None,
                 corpus: Measure | None = None) -> list[JobMemory]:
    """Each job that trains on a source's tables, and each local training, with what it adds
    at its peak: at the run's count floor, or at `floor`; or on a smaller sample, taking
    `share[lang]` of each language's documents taken. With `corpus` (`corpus_tables`), the
    jobs that train on the corpus's own units instead, measured by it. A job runs on
    `available_cores() // workers` threads (the pool shares them out); a local training on
    every core."""
    tables = Tables() if tables is None else tables
    source = source or next((plan.source for plan in plans if plan.source is not None), None)
    if source is None and corpus is None:
        return []

    def from_source(lang: str, name: str) -> TableStats:
        assert source is not None
        path = source.tables[(lang, name)]
        if share is not None:
            return tables.sampled(path, share[lang])
        return tables.at(path, max(source.min_count, floor or 1))

    measure = corpus or from_source
    threads = max(1, available_cores() // max(1, workers))
    found = []
    for plan in plans:
        stages = _stages(plan) if (plan.source is None) == (corpus is not None) else None
        if stages:
            found.append(_job(plan.label, plan.train_on, stages, measure, threads, False))
    for training in local:
        found.append(_job(training.label, training.languages, training.stages, measure,
                          available_cores(), True))
    return found


@dataclass(frozen=True)
class Need:
    """What a run's trainings need: `resident`, its processes together at their peak (what
    it holds now included); `address`, its largest process's address space."""

    resident: int
    address: int
    together: int
    biggest: JobMemory
    held: int
    mapped: int
    jobs: int = 1

    def over(self, room: Headroom) -> Limit | None:
        """The limit this need does not fit (the tightest, resident first), or None."""
        for limit in sorted(room.resident, key=lambda limit: limit.total):
            if self.resident > limit.total:
                return limit
        if room.address is not None and self.address > room.address.total:
            return room.address
        return None


def needed(jobs: list[JobMemory], workers: int, held: int, mapped: int) -> Need:
    """What the jobs need together: the pool runs the biggest first, `workers` at a time (in
    this process when there is one job or one worker), so at worst the `workers` biggest run
    side by side; a local training runs after them, in this process."""
    pooled = sorted((job for job in jobs if not job.local), key=lambda job: -job.resident)
    together = min(max(1, workers), len(pooled))
    resident = held + sum(job.resident for job in pooled[:together])
    local = [job for job in jobs if job.local]
    resident = max([resident, *(held + job.resident for job in local)])
    # Room for one more malloc arena and thread stack than the jobs' figures: glibc opens
    # arenas as its threads contend, which the quiet machine the figures were fitted on did
    # not show (an extension predicted at 1.2 GB of 1.23 GB could not start a thread beside a
    # test run; its floor, offered within 2 MB of the limit, failed so at times).
    address = mapped + max((job.address for job in jobs), default=0) + ARENA + stack_size()
    biggest = max(jobs, key=lambda job: job.resident)
    return Need(resident, address, together, biggest, held, mapped, len(jobs))


class TooLittleMemory(Invalid):
    """A run's trainings would need more memory than the process may have."""

    lines = True

    def render(self, names=None) -> str:
        """Its paragraphs (one a line in its message), each setting named as the face names
        it, then wrapped (`wrapped`): lines a face prints as they are."""
        return wrapped(*super().render(names).split("\n"))


def _shown(text: str) -> str:
    """A name from the data or the environment (a pattern, a cgroup's path) with what would
    break a line or move the cursor written as an escape: the refusal's line breaks are its
    own.

    >>> print(_shown("re:a" + chr(10) + "b"))
    re:a\\nb
    """
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
                   for char in text)


def check_memory(plans: list[JobPlan], workers: int, room: Headroom, stage=None,
                 cached: bool = True, cluster: bool = False,
                 local: Sequence[LocalTraining] = (), sample=None,
                 source: SourceTables | None = None,
                 corpus: Measure | None = None) -> list[JobMemory]:
    """Say the predicted peak (`stage`), and refuse the run (TooLittleMemory) before any
    training when it does not fit `room`, with the figure and the ways out (`_ways_out`).
    `cached`: the counted chunks are kept in the cache (else a rerun reads the text again).
    `cluster`: the jobs run on Dask workers, `workers` at once on each (its threads), which
    --jobs does not change. `sample`: the run's `SourcePlan`, to offer a smaller sample;
    `source`: its tables (default: the first plan's); `corpus`: a run's trainings on the
    corpus's own units instead, measured by it (`corpus_tables`)."""
    tables = Tables()
    source = source or next((plan.source for plan in plans if plan.source is not None), None)
    jobs = predict_jobs(plans, source, tables=tables, local=local, workers=workers,
                        corpus=corpus)
    if not jobs or (source is None and corpus is None):
        return jobs
    need = needed(jobs, workers, room.held, room.mapped)
    over = need.over(room)
    if over is None:
        if stage is not None:
            stage(_said(need, room))
        return jobs
    kept = ("." if corpus is not None else
            ": the counted chunks are cached, and a rerun with other training settings (a "
            "count floor, fewer jobs) reads no text." if cached
            else " (with --no-cache, a rerun reads the text again).")
    raise TooLittleMemory("\n".join([
        _refused(need, over),
        "Refused before training, so nothing is lost" + kept,
        "Ways out:",
        *(f"  {way}" for way in _ways_out(plans, source, need, over, room, workers, tables,
                                           local, sample, cluster, corpus))]))


def check_corpus_memory(room: Headroom, stage, local: Sequence[LocalTraining],
                        texts: dict[str, list[str]], units: Sequence[int],
                        splitters: dict[str, Splitter | None]) -> None:
    """`check_memory` for the local trainings (an extension) of a run that trains on the
    corpus's own units: checked first against what they cannot exceed (`corpus_bound`), which
    costs no cutting and, where memory is plenty, says nothing; otherwise measured
    (`corpus_tables`), said, and refused if it does not fit. Before, such a run had no
    prediction, and an extension under `ulimit -v` stopped while training, or the base's
    library aborted the process (Rust: "memory allocation of 16 bytes failed").

    The jobs a run trains on the corpus are not predicted: the engines' costs are measured
    on a source's tables (`costs`), whose fixed parts would refuse the small runs a corpus
    makes, which complete; memory they run out of is caught and said (`ran_out`)."""
    bound = predict_jobs([], local=local, corpus=corpus_bound(texts, units))
    if not bound or needed(bound, 1, room.held, room.mapped).over(room) is None:
        return
    check_memory([], 1, room, stage, local=local, corpus=corpus_tables(texts, units, splitters))


def _said(need: Need, room: Headroom) -> str:
    """The prediction, as a run says it before training."""
    tightest = min(room.resident, key=lambda limit: limit.total, default=None)
    said = (f"training needs about {byte_size(need.resident)} at its peak ("
            + _what(need) + ")")
    if tightest is not None:
        said += f", of {byte_size(tightest.total)} it may have"
    if room.address is not None:
        said += (f"; {byte_size(need.address)} of address space in one process "
                 f"({byte_size(need.mapped)} mapped already), of {byte_size(room.address.total)}")
    return said


def _job_said(need: Need, holder: str) -> str:
    """The training that needs most, as a sentence's subject: `the largest, shared [o200k],`,
    `shared [o200k]` (a run's one job), `it` (a command's one training)."""
    if holder != "run":
        return "it"
    return f"the largest, {need.biggest.label}," if need.jobs > 1 else need.biggest.label


def _what(need: Need, holder: str = "run") -> str:
    biggest = need.biggest
    return ((f"{need.together} jobs at once; " if need.together > 1 else "")
            + f"{_job_said(need, holder)} trains on {biggest.stats.kept_chunks:,} distinct "
            f"chunks, {byte_size(biggest.stats.kept_bytes)} of text; this {holder} holds "
            f"{byte_size(need.held)} already")


def _refused(need: Need, over: Limit, holder: str = "run") -> str:
    biggest = need.biggest
    if over.address:
        needs, room = _apart(need.address, over.total)
        return (f"Training needs about {needs} of address space in one process, more than "
                f"the {room} that {_shown(over.what)} allows: {_job_said(need, holder)} adds "
                f"{byte_size(biggest.address)} to the {byte_size(need.mapped)} this process "
                f"maps already, and room for one thread more "
                f"({byte_size(need.address - need.mapped - biggest.address)}), training on "
                f"{biggest.stats.kept_chunks:,} distinct chunks, "
                f"{byte_size(biggest.stats.kept_bytes)} of text.")
    needs, room = _apart(need.resident, over.total)
    return (f"Training needs about {needs} at its peak, more than the {room} that "
            f"{_shown(over.what)} leaves this {holder} ({_what(need, holder)}).")


def wrapped(*paragraphs: str, width: int = WIDTH) -> str:
    """Paragraphs as lines at most `width` wide, the first 16 shorter (for what prints
    before it), a paragraph that starts with spaces indented by two more where it wraps.

    >>> print(wrapped("a " * 30, "  " + "b " * 16, width=20))
    a a
    a a a a a a a a a a
    a a a a a a a a a a
    a a a a a a a a
      b b b b b b b b b
        b b b b b b b
    """
    lines: list[str] = []
    for paragraph in paragraphs:
        indent = paragraph[:len(paragraph) - len(paragraph.lstrip(" "))]
        first = "#" * 16 if not lines else ""
        found = textwrap.wrap(paragraph.strip(), width=width, initial_indent=first + indent,
                              subsequent_indent=indent + ("  " if indent else ""),
                              break_long_words=False, break_on_hyphens=False)
        if first and found:
            found[0] = found[0][len(first):]
        lines.extend(found)
    return "\n".join(lines)


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


def _about(need: Need, over: Limit) -> str:
    """A way out's figure, in what the limit it was refused by bounds."""
    return (f"about {byte_size(need.address)} of address space" if over.address
            else f"about {byte_size(need.resident)}")


def _ways_out(plans: list[JobPlan], source: SourceTables | None, need: Need, over: Limit,
              room: Headroom, workers: int, tables: Tables, local: Sequence[LocalTraining],
              sample, cluster: bool, corpus: Measure | None = None) -> list[str]:
    """What would bring a run's trainings within every limit, each with its figure, each
    predicted to fit, with a margin (`MARGIN`), before it is offered, but for the last: more
    memory. A run on the corpus's own units (`corpus`) has no count floor nor sample."""
    ways = []
    margin = room.less(MARGIN)

    def fits(floor: int | None = None, at_once: int = workers,
             share: dict[str, float] | None = None) -> Need | None:
        held, mapped = room.held, room.mapped
        if share is not None and source is not None:  # counted afresh: it holds what
            held, mapped = _after_counting(source, tables, share, held, mapped)  # counting leaves
        found = needed(predict_jobs(plans, source, floor, tables, local, at_once, share,
                                    corpus), at_once, held, mapped)
        return found if found.over(margin) is None else None

    one = "workers of one thread (dask worker --nthreads 1)" if cluster else f"{setting('jobs')} 1"
    fewer = workers > 1 and need.together > 1  # one job at a time would change the need
    floor = _least_floor(source, tables, fits) if source is not None else None
    if floor is not None:
        found = fits(floor)
        assert found is not None
        ways.append(f"{setting('min_chunk_count')} {floor}: {_about(found, over)} (train on the chunks "
                    f"seen at least {floor} times)")
    alone = fits(at_once=1) if fewer else None
    if alone is not None:
        ways.append(f"{one}: {_about(alone, over)} (one job at a time)")
    if fewer and alone is None and source is not None:  # neither: one at a time, and a floor
        both = _least_floor(source, tables, lambda k: fits(k, at_once=1))
        if both is not None and (floor is None or both < floor):
            found = fits(both, at_once=1)
            assert found is not None
            ways.append(f"{setting('min_chunk_count')} {both} with {one}: {_about(found, over)} "
                        f"(the chunks seen at least {both} times, one job at a time)")
    if sample is not None and source is not None:
        for at_once in ([workers, 1] if fewer and alone is None else [workers]):
            smaller = _smaller_sample(source, sample, lambda share, n=at_once:
                                      fits(share=share, at_once=n))
            if smaller is not None:
                total, found = smaller
                ways.append(f"{setting('train_bytes')} {byte_size(total).replace(' ', '')}"
                            + (f" with {one}" if at_once != workers else "")
                            + f": {_about(found, over)} (a sample counted afresh, so that run "
                            "reads the text again; its distinct chunks estimated from the "
                            "counts)")
                break
    more = byte_size((need.address if over.address else need.resident) * 1.15)
    if over.address:
        kib = math.ceil(need.address * 1.15 / 1024)
        ways.append(f"a higher address-space limit (ulimit -v {kib} or more)")
    elif over.what.startswith(MEMORY_ENV):
        ways.append(f"a higher limit of your own ({MEMORY_ENV}={more.replace(' ', '')} or "
                    "more), on a machine that has it")
    else:
        ways.append(f"a machine with {more} or more (with --scheduler, the Dask worker that "
                    "trains)")
    return ways


def _after_counting(source: SourceTables, tables: Tables, share: dict[str, float], held: int,
                    mapped: int) -> tuple[int, int]:
    """What a run holds and maps before training when it counts a smaller sample afresh (it
    is not in the cache): what this run does now, plus what counting leaves (`costs.COUNTED`)
    for the sample's expected distinct chunks of every table it counts (each pre-tokenizer's).
    A run that takes its tables from the cache holds less: checked with this, a sample
    offered fits the run that follows it (before: an extension's, offered to within 0.1 MB
    of the limit, held 8 MB more once counted and was refused again)."""
    counted = NO_CHUNKS
    for (lang, _), path in source.tables.items():
        counted += tables.sampled(path, share[lang])
    cost = costs.COUNTED
    return (held + cost.resident(counted.kept_chunks, counted.kept_bytes),
            mapped + cost.address(counted.kept_chunks, counted.kept_bytes, 0, available_cores(),
                                  stack_size()))


def _least_floor(source: SourceTables, tables: Tables, fits) -> int | None:
    """The least floor above the run's that keeps a chunk of every table (a floor that keeps
    none of a language is refused) and fits."""
    for floor in FLOORS:
        if floor <= source.min_count:
            continue
        if any(tables.at(path, floor).kept_chunks == 0 < tables.at(path, floor).chunks
               for path in source.tables.values()):
            return None  # and every higher floor keeps less
        if fits(floor) is not None:
            return floor
    return None


def _smaller_sample(source: SourceTables, sample, fits) -> tuple[int, Need] | None:
    """The largest sample (bytes, to two significant digits, rounded down) whose expected
    distinct chunks fit, with its figure; None when none that keeps a tenth of the text does.
    Each language's share is its new budget's rate over the one taken (`sample.budgets`)."""
    from .sample import budgets, parse_mix

    taken = sum(source.bytes_by_language.values())
    if taken <= 0 or source.min_count > 1:
        return None
    available = {lang: plan.available for lang, plan in sample.languages.items()}

    def share_of(total: int) -> dict[str, float]:
        wanted = budgets(parse_mix(sample.mix), available, total)
        return {lang: min(1.0, wanted[lang] / max(1, source.bytes_by_language[lang]))
                for lang in source.order}

    low, high = 0.1, 1.0
    if fits(share_of(int(taken * low))) is None:
        return None
    for _ in range(12):  # to a few parts in a thousand
        middle = (low + high) / 2
        if fits(share_of(int(taken * middle))) is not None:
            low = middle
        else:
            high = middle
    total = _round_down(int(taken * low))
    found = fits(share_of(total))
    return (total, found) if found is not None else None


def _round_down(n: int) -> int:
    """To two significant digits, down.

    >>> _round_down(19_149_000), _round_down(7)
    (19000000, 7)
    """
    scale = 10 ** max(0, len(str(n)) - 2)
    return n // scale * scale


def check_texts(chunks: int, n_bytes: int, entries: int, room: Headroom,
                label: str = "the training") -> Need:
    """A training on texts already cut and held (`analyzer train`: their distinct chunks and
    bytes, a list of strings, to `entries` merges), predicted against `room`; TooLittleMemory,
    before it starts, when it does not fit."""
    stats = TableStats(chunks, n_bytes, chunks, n_bytes)
    cost = costs.LISTED
    job = JobMemory(label, stats, cost.resident(chunks, n_bytes, entries),
                    cost.address(chunks, n_bytes, entries, available_cores(), stack_size()))
    need = needed([job], 1, room.held, room.mapped)
    over = need.over(room)
    if over is None:
        return need
    more = (f"a higher address-space limit (ulimit -v {math.ceil(need.address * 1.15 / 1024)} "
            "or more)" if over.address else
            f"a higher limit of your own ({MEMORY_ENV}="
            f"{byte_size(need.resident * 1.15).replace(' ', '')} or more)"
            if over.what.startswith(MEMORY_ENV) else
            f"a machine with {byte_size(need.resident * 1.15)} or more")
    raise TooLittleMemory("\n".join([
        _refused(need, over, "command"), "Refused before training. Ways out:",
        "  fewer or smaller files (the distinct chunks are what training holds)", f"  {more}"]))


def ran_out(error: BaseException, room: Headroom | None, training: bool | None = False,
            run: bool = True, counting: bool = False,
            source: bool = True) -> TooLittleMemory | None:
    """An error that says memory ran out (MemoryError, a thread that could not start, an
    allocation or a mapping refused: `headroom.short_of_memory`), said in words, with the limit
    that bounds the process (`ulimit -v`, which is what makes a MemoryError, where there is
    one) and whether training had started (None: a command that does not train), or
    (`counting`) that a run with nothing to train was counting; a `run`'s (trained on a
    `source`, or on the corpus's own units, where a count floor and a sample are not
    options), or `analyzer train`'s; None for any other error."""
    if not short_of_memory(error):
        return None
    limits = [] if room is None else sorted(room.resident, key=lambda limit: limit.total)
    limit = room.address if room is not None and room.address is not None else \
        (limits[0] if limits else None)
    under = f", under {_shown(limit.what)} of {byte_size(limit.total)}" \
        if limit is not None else ""
    cause = f"({type(error).__name__}" + (f": {_shown(str(error))}" if str(error) else "") + ")"
    if training is None:
        return TooLittleMemory(f"The command ran out of memory {cause}{under}. Give it more "
                               "memory.")
    if counting:
        return TooLittleMemory("\n".join([
            f"The run ran out of memory while counting {cause}{under}; nothing was stored.",
            "Give it more memory, or measure fewer tokenizers in one run."]))
    when = "while training" if training else "before training"
    if not run:
        return TooLittleMemory(f"Training ran out of memory {when} {cause}{under}.\nGive it "
                               "more memory, or train on fewer or smaller files.")
    # One job at a time shrinks what processes hold together, not one process's address space.
    one = "" if limit is not None and limit.address else \
        f", one job at a time ({setting('jobs')} 1)"
    less = (f"train on less: a count floor ({setting('min_chunk_count')}), a smaller sample "
            f"({setting('train_bytes')}){one}." if source else
            f"train fewer vocabularies in one run (fewer sizes or kinds){one}.")
    return TooLittleMemory("\n".join([
        f"The run ran out of memory {when} {cause}{under}; nothing was stored.",
        f"Give it more memory, or {less}"]))

