"""The chunk-count cache: each language's counted chunks of a training source's sample, under
one pre-tokenizer, kept beside the database (`<database>.chunks/`) and used again, so that a
second run with other sizes or settings reads no text.

An entry is keyed by what determines it (the source's fingerprint, the language, the
pre-tokenizer's pattern, and the sample: seed, rate, what is skipped) and is one Arrow IPC file
(`<key>.arrow`: the chunks, their counts and first occurrences, in order of first occurrence;
what it was counted from, its key and a checksum in its metadata), written atomically: a
stopped run leaves no half entry. An entry is verified before it is used (`read_entry`: its
key, schema, counts and checksum), and a damaged one is counted again.

    cache = ChunkCache.beside(db.path)
    table = cache.load(key) or count_it_and(cache.save(key, table, about))
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import tempfile
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from analyzer.bpe.counting import ChunkTable
from analyzer.bpe.packing import PackedChunks
from analyzer.errors import SETTING, Busy, Invalid
from analyzer.files import not_regular, write_atomically
from analyzer.headroom import short_of_memory
from analyzer.store.processes import is_alive

SUFFIX = ".arrow"
IN_USE = ".in-use"
"""The lock file of a cache folder: each run holds it shared while it uses the entries, and
clearing takes it alone, so entries never vanish from under a run."""
FORMAT = "analyzer chunk counts 1"
COLUMNS = {"chunk": pa.large_string(), "count": pa.int64(), "first": pa.int64()}
"""An entry's columns and their types, in order."""
MAX_COUNT = 1 << 48
"""More occurrences of one chunk than any sample has (256 TB of text): a count above it, or
below 1, is damage."""


class CacheInUse(Busy):
    """A run is using the chunk-count cache: it cannot be cleared now."""


class DamagedEntry(ValueError):
    """A cache file that is not a whole, sound entry; the message says what is wrong."""


def cache_key(*parts: object) -> str:
    """The key of an entry: SHA-256 of what determines it."""
    return hashlib.sha256("\0".join(map(str, (FORMAT, *parts))).encode()).hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    path: Path
    size: int
    about: dict
    """What the entry was counted from (source, fingerprint, language, pre-tokenizer, sample)."""


class ChunkCache:
    """A folder of entries; `folder` None keeps them in a temporary folder for this run only
    (`--no-cache`: jobs still read their tables from files)."""

    def __init__(self, folder: Path | None):
        self.kept = folder is not None
        self.folder = folder if folder is not None else Path(tempfile.mkdtemp(prefix="analyzer-chunks-"))
        if self.kept:
            # Said now, not after counting: a file, or a link to nothing, where the folder goes.
            if os.path.lexists(self.folder) and not self.folder.is_dir():
                what = not_regular(self.folder) or "a file"
                raise Invalid(f"the chunk-count cache {self.folder} is {what}, not a folder; "
                              f"move it away, or run with {SETTING} turned off",
                              setting="chunk_cache", file=str(self.folder))
            remove_stale_partials(self.folder)

    @classmethod
    def beside(cls, db_path: Path) -> ChunkCache:
        return cls(db_path.with_name(db_path.name + ".chunks"))

    def path(self, key: str) -> Path:
        return self.folder / f"{key}{SUFFIX}"

    def has(self, key: str) -> bool:
        """Whether the entry is there (a regular file; verified when read). Invalid when a
        folder stands where it goes: it could not be written, and is said before counting."""
        if not self.kept:
            return False
        path = self.path(key)
        if path.is_dir() and not path.is_symlink():
            raise Invalid(f"{path} in the chunk-count cache is a folder, not an entry; move it "
                          f"away, or run with {SETTING} turned off", setting="chunk_cache",
                          file=str(path))
        return os.path.isfile(path) and not os.path.islink(path)

    def save(self, key: str, table: ChunkTable | Listed, about: dict) -> Path:
        """Write the entry (atomically); its path. A counter that lists its chunks a slice at a
        time (`Listed`: the compiled `PartedCounter`) is written slice by slice, so that its
        table is never whole in memory beside it: read once for the checksum, once to write."""
        self.folder.mkdir(parents=True, exist_ok=True)
        slices = _slices_of(table)
        about = {"format": FORMAT, "key": key, **about}
        about["checksum"] = checksum(slices, about)
        schema = pa.schema(list(COLUMNS.items()), metadata={"analyzer": json.dumps(about)})

        def write(file) -> None:  # straight into the file, a slice at a time
            with ipc.new_file(pa.PythonFile(file, mode="w"), schema) as writer:
                for data, offsets, counts, firsts in slices():
                    # The arrays as Arrow buffers, uncopied but the offsets (from 0 in each).
                    chunks = pa.LargeStringArray.from_buffers(
                        len(counts), pa.py_buffer(offsets - offsets[0]), pa.py_buffer(data))
                    writer.write_batch(pa.record_batch([chunks, pa.array(counts),
                                                        pa.array(firsts)], schema=schema))

        path = self.path(key)
        if os.path.lexists(path) and not self.has(key):
            # Not an entry (a link, a pipe, a device): replaced, never followed or written into.
            path.unlink()
        write_atomically(path, write)
        return path

    def verify(self, key: str) -> dict:
        """The entry's metadata, once its table is read and found sound; DamagedEntry (saying
        what is wrong) otherwise."""
        return read_entry(self.path(key), key)[1]

    def entries(self) -> list[CacheEntry]:
        """Every entry, with what it was counted from (damaged ones left out)."""
        if not self.kept or not self.folder.is_dir():
            return []
        found = []
        for path in sorted(self.folder.glob(f"*{SUFFIX}")):
            about = read_about(path)
            if about is not None:
                found.append(CacheEntry(path, path.stat().st_size, about))
        return found

    @contextlib.contextmanager
    def in_use(self):
        """Held by a run while it counts into the cache and trains from it: `clear` refuses
        meanwhile (a run whose entries were removed under it failed). Shared, so that runs
        use one cache at once."""
        if not self.kept:
            yield
            return
        with self._lock(fcntl.LOCK_SH):
            yield

    def clear(self, fingerprint: str | None = None) -> tuple[int, int]:
        """Remove the entries (of one source's fingerprint, or all); (entries, bytes) removed.
        CacheInUse, removing nothing, while a run uses the cache (`in_use`)."""
        if not self.folder.is_dir():
            return 0, 0
        try:
            with self._lock(fcntl.LOCK_EX | fcntl.LOCK_NB):
                removed = size = 0
                for entry in self.entries():
                    if fingerprint is None or entry.about.get("fingerprint") == fingerprint:
                        size += entry.size
                        entry.path.unlink(missing_ok=True)
                        removed += 1
                return removed, size
        except BlockingIOError:  # the lock is held: a run is using the entries
            raise CacheInUse(f"the chunk-count cache {self.folder} is in use by a run now; "
                             "nothing was removed. Clear it once the run has ended") from None

    @contextlib.contextmanager
    def _lock(self, how: int):
        """The cache's lock file, locked `how` (flock: released when the file is closed, and
        by the system when the process ends however it ends)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / IN_USE
        try:  # never through a link, never blocked by a pipe put there
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise Invalid(f"{path} in the chunk-count cache cannot be used as its lock "
                          f"({error.strerror}); move it away", file=str(path)) from None
        try:
            if what := not_regular(path):
                raise Invalid(f"{path} in the chunk-count cache is {what}, not its lock file; "
                              "move it away", file=str(path))
            fcntl.flock(fd, how)
            yield
        finally:
            os.close(fd)

    def discard(self) -> None:
        """Remove a run's temporary folder (`--no-cache`)."""
        if not self.kept:
            shutil.rmtree(self.folder, ignore_errors=True)


def remove_stale_partials(folder: Path) -> None:
    """Remove the temporary files (`.<entry>.<pid>.partial`) of runs that ended while writing
    an entry (killed, or stopped by a signal while their writer thread wrote): their process is
    gone. A running process's are its own."""
    for path in folder.glob(f".*{SUFFIX}.*.partial") if folder.is_dir() else ():
        pid = path.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not is_alive(None, int(pid), None):
            path.unlink(missing_ok=True)


def read_about(path: Path) -> dict | None:
    """An entry's metadata; None when the file is not a whole entry."""
    try:
        with _out_of_memory_said(), pa.memory_map(str(path)) as source:
            schema = ipc.open_file(source, options=SERIAL).schema
        about = json.loads(schema.metadata[b"analyzer"])
    except (OSError, pa.ArrowException, KeyError, ValueError, TypeError):
        return None
    return about if about.get("format") == FORMAT else None


class Listed(Protocol):
    """A counter that lists its chunks in order of first occurrence a slice at a time
    (`items(limit)` call after call, `rewind()` to begin again): the compiled
    `PartedCounter`."""

    def items(self, limit: int = -1) -> tuple[bytes, bytes, bytes, bytes]: ...

    def rewind(self) -> None: ...

    def __len__(self) -> int: ...


SLICE_CHUNKS = 1 << 20
"""Chunks listed at a time from a counter written to the cache (a record batch each)."""

Slice = tuple[bytes, np.ndarray, np.ndarray, np.ndarray]
"""Chunks in order: their bytes end to end, int64 offsets (one more than the chunks; counted
from the table's first byte), counts and first occurrences."""


def _slices_of(table: ChunkTable | Listed) -> Callable[[], Iterator[Slice]]:
    """What lists a table's slices, from the first, each time it is called: a ChunkTable in one
    slice, a counter `SLICE_CHUNKS` at a time."""
    def whole() -> Iterator[Slice]:
        assert isinstance(table, ChunkTable)
        yield (table.data, np.frombuffer(table.offsets, np.int64),
               np.frombuffer(table.counts, np.int64), np.frombuffer(table.firsts, np.int64))

    def listed() -> Iterator[Slice]:
        assert not isinstance(table, ChunkTable)
        table.rewind()
        for number in itertools.count():
            data, *parts = table.items(SLICE_CHUNKS)
            offsets, counts, firsts = (np.frombuffer(part, np.int64) for part in parts)
            if len(counts) or not number:  # an empty table is one empty slice
                yield data, offsets, counts, firsts
            if not len(counts):
                return

    return whole if isinstance(table, ChunkTable) else listed


def checksum(table: ChunkTable | Callable[[], Iterator[Slice]], about: dict) -> str:
    """SHA-256 of an entry's table (its chunks' bytes and offsets, counts and first occurrences)
    and metadata (all but the checksum itself); the table may be given as its slices
    (`_slices_of`), read once per column."""
    digest = hashlib.sha256(json.dumps({name: value for name, value in about.items()
                                        if name != "checksum"}, sort_keys=True).encode())
    slices = _slices_of(table) if isinstance(table, ChunkTable) else table
    n = sum(len(counts) for _, _, counts, _ in slices())
    for column, length in ((1, n + 1), (2, n), (3, n)):
        digest.update(length.to_bytes(8, "little"))
        end = b""
        for piece in slices():
            values = cast(np.ndarray, piece[column])
            if column == 1:  # a slice's offsets end where the next one's begin: given once
                values, end = values[:-1], values[-1:].tobytes()
            digest.update(values.data.cast("B"))
        digest.update(end)
    for data, _, _, _ in slices():
        digest.update(data)
    return digest.hexdigest()


def read_entry(path: Path, key: str | None = None) -> tuple[ChunkTable, dict]:
    """An entry's table and metadata, verified: a whole Arrow file of this format, under its
    own key (`key`, else its file name's), with the columns and types it is written with,
    counts within bounds, first occurrences in order, and its checksum. DamagedEntry says what
    is not so (the entry is then counted again)."""
    key = key if key is not None else path.name.removesuffix(SUFFIX)
    try:
        with _out_of_memory_said(), pa.memory_map(str(path)) as source:
            arrow = ipc.open_file(source, options=SERIAL).read_all()
        about = json.loads(arrow.schema.metadata[b"analyzer"])
    except (OSError, pa.ArrowException, KeyError, ValueError, TypeError):
        raise DamagedEntry("not a whole chunk-count table") from None
    if not isinstance(about, dict) or about.get("format") != FORMAT:
        raise DamagedEntry("not a chunk-count table of this format")
    if about.get("key") != key:
        raise DamagedEntry("written under another key (moved or copied over)")
    if "checksum" not in about:
        raise DamagedEntry("written without a checksum (by an older analyzer)")
    if [(field.name, field.type) for field in arrow.schema] != list(COLUMNS.items()):
        raise DamagedEntry("its columns are not chunk (text), count and first (integers)")
    try:
        with _out_of_memory_said():
            arrow.validate(full=True)  # offsets in bounds, text UTF-8
            table = _table(arrow)
    except (pa.ArrowException, ValueError, IndexError, TypeError):
        raise DamagedEntry("its chunks' text or offsets are broken") from None
    if len(table) != about.get("chunks"):
        raise DamagedEntry(f"it holds {len(table):,} chunks of {about.get('chunks')!r} written")
    counts = np.frombuffer(table.counts, np.int64)
    if len(counts) and (counts.min() < 1 or counts.max() > MAX_COUNT):
        raise DamagedEntry("its counts are not whole numbers from 1 to 2**48")
    firsts = np.frombuffer(table.firsts, np.int64)
    if len(firsts) and (firsts[0] < 0 or np.any(firsts[1:] <= firsts[:-1])):
        raise DamagedEntry("its chunks are not in order of first occurrence")
    if checksum(table, about) != about["checksum"]:
        raise DamagedEntry("its checksum does not match its content")
    return table, about


SERIAL = ipc.IpcReadOptions(use_threads=False)
"""An entry is read in this thread: its columns are mapped, not decoded, so Arrow's threads
would save nothing, and each would need a stack (under `ulimit -v`, one that cannot be mapped
made a good entry look damaged)."""

@contextlib.contextmanager
def _out_of_memory_said() -> Iterator[None]:
    """Memory that runs out while an entry is read (Arrow's MemoryError, a mapping or a thread
    refused under `ulimit -v`) raised as MemoryError: the entry is whole, the process short of
    room (before, a good entry was called damaged and counted again)."""
    try:
        yield
    except pa.ArrowMemoryError as error:
        raise MemoryError(str(error)) from None
    except (OSError, pa.ArrowException) as error:
        if short_of_memory(error):
            raise MemoryError(str(error)) from None
        raise


def _table(arrow: pa.Table) -> ChunkTable:
    """An Arrow table's columns as a ChunkTable (offsets from 0)."""
    chunks = arrow.column("chunk").combine_chunks()
    offsets = np.frombuffer(chunks.buffers()[1], np.int64)[chunks.offset:
                                                             chunks.offset + len(chunks) + 1]
    data = chunks.buffers()[2]
    base = int(offsets[0]) if len(offsets) else 0
    blob = data.to_pybytes()[base:int(offsets[-1])] if data is not None else b""
    return ChunkTable(blob, _int64s(offsets - base), _int64s(arrow.column("count")),
                      _int64s(arrow.column("first")))


def load_table(path: Path) -> ChunkTable | None:
    """An entry's table, verified (`read_entry`); None when it is damaged (it is counted
    again)."""
    try:
        return read_entry(path)[0]
    except DamagedEntry:
        return None


def _int64s(values) -> array:
    """An int64 `array` of a numpy array or an Arrow column, copied at C speed."""
    found = array("q")
    found.frombytes((values.to_numpy() if not isinstance(values, np.ndarray) else values).tobytes())
    return found


def table_chunks(path: Path, min_count: int = 1) -> tuple[PackedChunks, array]:
    """An entry's chunks (text made one at a time when read, or laid out for the engine as
    they are) and their counts: what training takes; those counted `min_count` times or more."""
    try:
        table = read_entry(path)[0]
    except DamagedEntry as error:
        raise OSError(f"{path} is not a whole chunk-count table: {error} (changed since it was "
                      "written?)") from None
    table = at_least(table, min_count)
    return PackedChunks(table.data, table.offsets), table.counts


def at_least(table: ChunkTable, min_count: int) -> ChunkTable:
    """The table's chunks counted `min_count` times or more, in the same order (the count
    floor, `min_chunk_count`).

    >>> table = ChunkTable(b"abcd", array("q", [0, 1, 3, 4]), array("q", [2, 1, 5]),
    ...                    array("q", [0, 1, 2]))
    >>> kept = at_least(table, 2)
    >>> kept.chunks(), list(kept.counts)
    (['a', 'd'], [2, 5])
    """
    if min_count <= 1:
        return table
    counts = np.frombuffer(table.counts, np.int64)
    offsets = np.frombuffer(table.offsets, np.int64)
    keep = counts >= min_count
    lengths = np.diff(offsets)
    # A byte is kept when its chunk is: one flag per byte, for as long as the copy takes.
    data = np.frombuffer(table.data, np.uint8)[np.repeat(keep, lengths)].tobytes()
    kept_offsets = np.zeros(int(keep.sum()) + 1, np.int64)
    np.cumsum(lengths[keep], out=kept_offsets[1:])
    return ChunkTable(data, _int64s(kept_offsets), _int64s(counts[keep]),
                      _int64s(np.frombuffer(table.firsts, np.int64)[keep]))


def folder_size(folder: Path) -> int:
    return sum(entry.stat().st_size for entry in os.scandir(folder)) if folder.is_dir() else 0
