"""A training text's distinct chunks with their counts, gathered batch by batch: what the engine
trains on (`ChunkCounts`), made without ever holding the text.

`chunk_counter()` is the compiled counter (engine/counter.c: the chunks' bytes in one arena)
or, without the compiled engine, a dict with the same face. Each chunk keeps the smallest
order key it is given, the key of its first occurrence: batches gathered in any order, on any
thread or machine, give the chunks in the order one pass over the text would.

>>> counter = chunk_counter()
>>> count_texts(counter, ["b a", "a"], resolve("words"), first=100)
>>> count_texts(counter, ["c"], resolve("words"), first=0)
>>> table = ChunkTable.of(counter)
>>> table.chunks(), list(table.counts)
(['c', 'b', ' a', 'a'], [1, 1, 1, 1])
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from . import choice, native_split
from .pretokenize import Pretokenizer, Splitter, distinct_chunks, resolve

__all__ = ["ChunkTable", "Counter", "chunk_counter", "count_texts", "count_utf8", "merged",
           "parted_counter", "resolve", "table_of"]


class Counter(Protocol):
    """What a chunk counter does (the compiled one, or `PureCounter`)."""

    def add(self, chunks: Sequence[str], counts: Sequence[int] | None = None,
            first: int = 0) -> None: ...

    def add_items(self, data: bytes, offsets, counts, firsts) -> None: ...

    def merge(self, other) -> None: ...

    def items(self) -> tuple[bytes, bytes, bytes, bytes]: ...

    def __len__(self) -> int: ...


class PureCounter:
    """The counter in Python: a dict from each chunk to its count and first key."""

    def __init__(self) -> None:
        self.found: dict[bytes, list[int]] = {}
        self.lock = threading.Lock()  # threads may count into one counter (`parted_counter`)

    def __getstate__(self) -> dict:  # pickled (sent to or from a worker) without its lock
        return {"found": self.found}

    def __setstate__(self, state: dict) -> None:
        self.found, self.lock = state["found"], threading.Lock()

    def _add(self, chunk: bytes, count: int, first: int) -> None:
        entry = self.found.get(chunk)
        if entry is None:
            self.found[chunk] = [count, first]
        else:
            entry[0] += count
            entry[1] = min(entry[1], first)

    def add(self, chunks: Sequence[str], counts: Sequence[int] | None = None,
            first: int = 0) -> None:
        with self.lock:
            for index, chunk in enumerate(chunks):
                self._add(chunk.encode("utf-8"), 1 if counts is None else counts[index],
                          first + index)

    def add_items(self, data: bytes, offsets, counts, firsts) -> None:
        offsets, counts, firsts = (_int64s(values) for values in (offsets, counts, firsts))
        with self.lock:
            for index in range(len(counts)):
                self._add(data[offsets[index]:offsets[index + 1]], counts[index], firsts[index])

    def merge(self, other) -> None:
        self.add_items(*other.items())

    def items(self) -> tuple[bytes, bytes, bytes, bytes]:
        ordered = sorted(self.found.items(), key=lambda item: item[1][1])
        offsets = array("q", [0])
        for chunk, _ in ordered:
            offsets.append(offsets[-1] + len(chunk))
        return (b"".join(chunk for chunk, _ in ordered), offsets.tobytes(),
                array("q", [entry[0] for _, entry in ordered]).tobytes(),
                array("q", [entry[1] for _, entry in ordered]).tobytes())

    def __len__(self) -> int:
        return len(self.found)

    @property
    def nbytes(self) -> int:
        return sum(len(chunk) + 120 for chunk in self.found)  # about what a dict entry takes


def _int64s(values) -> array:
    if isinstance(values, array):
        return values
    found = array("q")
    found.frombytes(bytes(values))
    return found


def chunk_counter() -> Counter:
    """A new, empty counter: the compiled one where it is built."""
    engine = choice.extension()
    return engine.ChunkCounter() if engine is not None else PureCounter()


def parted_counter(parts: int) -> Counter:
    """A new, empty counter that `parts` threads count into at once: the compiled
    `PartedCounter` (each distinct chunk in the one part its hash picks, so no two threads'
    tables repeat a chunk and none is merged), or one `PureCounter`, locked."""
    engine = choice.extension()
    return engine.PartedCounter(min(max(1, parts), 64)) if engine is not None else PureCounter()


def count_utf8(counter: Counter, data: bytes, starts, ends, splitter: Splitter | None,
               first: int = 0) -> bool:
    """`count_texts` of the documents `data[starts[k]:ends[k]]` (UTF-8; int64 offsets) into a
    `parted_counter`, with no Python string made per document; False, with nothing counted,
    where it cannot (a pre-tokenizer that is not compiled, no compiled counter, or a pattern
    that would lose a character): the caller counts the decoded texts with `count_texts`."""
    if not (isinstance(splitter, Pretokenizer) and splitter.native
            and hasattr(counter, "count_utf8") and native_split.available()):
        return False
    return native_split.count_utf8_into(counter, data, starts, ends, splitter.name, first)


def count_texts(counter: Counter, texts: Sequence[str], splitter: Splitter | None,
                first: int = 0, threads: int | None = None) -> None:
    """Count the chunks `splitter` cuts the texts into (each text one chunk without one), the
    n-th distinct chunk of the texts given order key `first + n` (a compiled splitter on
    `threads` threads: default, `threads.default_threads`)."""
    if splitter is None:
        counter.add(texts, None, first)
        return
    if isinstance(splitter, Pretokenizer) and splitter.native and not isinstance(counter, PureCounter) \
            and native_split.count_into(counter, texts, splitter.name, first, threads):
        return  # split and counted in compiled code, no Python string per chunk
    chunks, counts = distinct_chunks(texts, splitter)
    counter.add(chunks, counts if isinstance(counts, array) else array("q", counts), first)


@dataclass
class ChunkTable:
    """A counter's chunks, in order of first occurrence: their UTF-8 end to end with int64
    offsets (one more than the chunks), counts and order keys."""

    data: bytes
    offsets: array
    counts: array
    firsts: array

    @classmethod
    def of(cls, counter: Counter) -> ChunkTable:
        return cls.of_items(*counter.items())

    @classmethod
    def of_items(cls, data: bytes, offsets, counts, firsts) -> ChunkTable:
        """A table of a counter's `items()`."""
        return cls(data, _int64s(offsets), _int64s(counts), _int64s(firsts))

    def __len__(self) -> int:
        return len(self.counts)

    def items(self) -> Iterator[tuple[str, int]]:
        """Each chunk (as text, made when reached) with its count, as a dict's items.

        >>> list(table_of(["ab", "c"], [2, 1]).items())
        [('ab', 2), ('c', 1)]
        """
        data, offsets = self.data, self.offsets
        for k, count in enumerate(self.counts):
            yield data[offsets[k]:offsets[k + 1]].decode("utf-8"), count

    def chunks(self) -> list[str]:
        """The chunks as text."""
        data, offsets = self.data, self.offsets
        return [data[offsets[k]:offsets[k + 1]].decode("utf-8") for k in range(len(self.counts))]

    @property
    def n_bytes(self) -> int:
        """The bytes of the text it was counted from (each chunk's bytes times its count)."""
        offsets = self.offsets
        return sum((offsets[k + 1] - offsets[k]) * count for k, count in enumerate(self.counts))


def merged(tables: Iterable[tuple[bytes, Sequence[int], Sequence[int]]]) -> ChunkTable:
    """Several tables of distinct chunks (UTF-8 end to end, int64 offsets from 0, counts) as
    one: each chunk once, its counts summed, in order of first appearance (a table's new
    chunks after the tables before it). Read one table at a time, merged in the compiled
    counter: no Python object per chunk (a training source's languages, millions of chunks).

    >>> table = merged([(b"abc", array("q", [0, 2, 3]), array("q", [2, 1])),
    ...                 (b"cd", array("q", [0, 1, 2]), array("q", [4, 1]))])
    >>> table.chunks(), list(table.counts)
    (['ab', 'c', 'd'], [2, 5, 1])
    """
    counter = chunk_counter()
    first = 0
    for data, offsets, counts in tables:
        n = len(counts)
        counter.add_items(data, offsets, counts, array("q", range(first, first + n)))
        first += n
    items = counter.items()
    del counter  # let go before the table is made of its items
    return ChunkTable.of_items(*items)


def table_of(chunks: Sequence[str], counts: Sequence[int]) -> ChunkTable:
    """Chunks (text; one may come again) with their counts as a ChunkTable: each once, its
    counts summed, in order of first appearance.

    >>> table = table_of(["b", "a", "b"], [2, 1, 1])
    >>> table.chunks(), list(table.counts)
    (['b', 'a'], [3, 1])
    """
    counter = chunk_counter()
    counter.add(chunks, counts if isinstance(counts, array) else array("q", counts))
    return ChunkTable.of(counter)
