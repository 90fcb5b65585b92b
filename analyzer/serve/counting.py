"""Counting texts for `tokenize` and `compare`: one function, run in the server's process for
a little work (its vocabularies already loaded there) and in the counting processes for the
rest.

Counting is CPU work in libraries that may hold the GIL for as long as a text takes (a
tokenizer's encoder in Rust or C++): on a thread of the server it would stall the event loop
and every other request with it. So the server hands it to a few processes of its own
(`CountingProcesses`), each with its own loaded vocabularies, at most one request each at a
time; one more gets 503 with `Retry-After`.

    answer(database, [("tokenizer", "cl100k_base")], Tokenize("The cat sat.", "cl100k_base"))
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from analyzer.errors import Invalid
from analyzer.external import resolve_tokenizer
from analyzer.queries import comparison, tokenization, trained_vocabulary
from analyzer.store import AnalyzerDatabase, DatabaseGone, open_db, reconnect

from .problems import ServerBusy

T = TypeVar("T")


@dataclass(frozen=True)
class DatabaseRef:
    """Which database a counting process reads trained vocabularies from: its path and the
    file it was when the server checked it (a process never opens another in its place)."""

    path: str
    identity: tuple[int, int] | None


@dataclass(frozen=True)
class Tokenize:
    """A text's pieces under one vocabulary (`POST /api/tokenize`)."""

    text: str
    label: str


@dataclass(frozen=True)
class Compare:
    """Texts in several languages under several vocabularies (`POST /api/compare`)."""

    texts: dict[str, str]
    names: list[str]
    pivot: str | None
    pieces: bool


class Loaded:
    """A loaded encoder, one caller at a time (its chunk cache is shared between requests)."""

    def __init__(self, pieces):
        self._pieces = pieces
        self.lock = threading.Lock()

    def pieces(self, text: str) -> list[tuple[int, bytes]]:
        with self.lock:
            return self._pieces(text)


CACHE_SIZE = 16
"""Vocabularies a process keeps loaded (the least recently used goes first)."""

_loaded: OrderedDict[tuple, Loaded] = OrderedDict()
_lock = threading.Lock()
_database: dict[DatabaseRef, AnalyzerDatabase] = {}


def loaded(key: tuple) -> Loaded | None:
    """The vocabulary if this process has it loaded, else None."""
    with _lock:
        if key in _loaded:
            _loaded.move_to_end(key)
            return _loaded[key]
    return None


def load(database: DatabaseRef, key: tuple) -> Loaded:
    """A vocabulary, loaded once per process: `("trained", run, scope, size, pretokenizer)` or
    `("tokenizer", catalog name)`."""
    found = loaded(key)
    if found is not None:
        return found
    if key[0] == "tokenizer":
        tokenizer = resolve_tokenizer(key[1], downloads=False)
        if tokenizer.pieces is None:
            raise Invalid(f"{key[1]} cannot show its pieces")
        # the encoder asked of the library's cache at each use, kept within its bound
        # (`analyzer.external.loaded`), built again only once dropped from it
        def pieces(text: str) -> list[tuple[int, bytes]]:
            encoded = tokenizer.pieces
            assert encoded is not None  # it could show its pieces when loaded
            return encoded(text)

        found = Loaded(pieces)
    else:
        _, run_id, scope, size, pretokenizer = key
        db = reconnect(_opened(database))
        try:
            found = Loaded(trained_vocabulary(db, run_id, scope, size, pretokenizer).pieces)
        finally:
            db.conn.close()
    with _lock:
        _loaded[key] = found
        while len(_loaded) > CACHE_SIZE:
            _loaded.popitem(last=False)
    return found


def _opened(database: DatabaseRef) -> AnalyzerDatabase:
    """The database as this process first opened it (checked: still the server's file)."""
    with _lock:
        db = _database.get(database)
    if db is None:
        if not Path(database.path).exists():
            raise DatabaseGone(f"the database {database.path} was deleted while in use; nothing "
                               "more was read from it")
        db = open_db(Path(database.path), create=False)
        db.conn.close()  # each load opens its own (`reconnect`), which checks the file again
        if database.identity is not None and db.identity != database.identity:
            raise DatabaseGone(f"the database {database.path} was replaced by another file "
                               "while in use")
        with _lock:
            _database[database] = db
    return db


def answer(database: DatabaseRef, keys: list[tuple], question: Tokenize | Compare) -> bytes:
    """The answer's JSON, counted here: in a counting process, or in the server's own."""
    counters = [load(database, key) for key in keys]
    if isinstance(question, Tokenize):
        document = {"vocab": question.label, **tokenization(question.text, counters[0].pieces)}
    else:
        document = comparison(question.texts,
                              {name: found.pieces for name, found in zip(question.names, counters)},
                              question.pivot, with_pieces=question.pieces)
    # As Starlette's JSONResponse renders (FastAPI's encoder would walk every piece again).
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


class CountingProcesses:
    """`slots` processes that count, started on first use; at most one request each at a time,
    the next gets ServerBusy (503). A slot is free again when its work ends, not when its client
    leaves: a client that disconnects cannot make room for more work than there are processes."""

    def __init__(self, slots: int):
        self.slots = slots
        self.active = 0  # read and written on the event loop only
        self.pool: ProcessPoolExecutor | None = None

    async def run(self, function: Callable[..., T], *args) -> T:
        if self.active >= self.slots:
            raise ServerBusy(f"the server is already counting for {self.active} requests, as "
                             "many as it takes at once; try again in a moment")
        if self.pool is None:
            # Spawned, not forked: the server's threads and event loop stay behind.
            self.pool = ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context("spawn"))
        loop = asyncio.get_running_loop()
        self.active += 1
        try:
            future = self.pool.submit(function, *args)
        except BaseException:
            self.active -= 1
            raise
        future.add_done_callback(lambda _: loop.call_soon_threadsafe(self._release))
        try:
            return await asyncio.wrap_future(future)
        except BrokenProcessPool:
            self.pool = None  # a process died (killed, out of memory): the next use starts anew
            raise ServerBusy("a counting process of the server ended unexpectedly; try again") \
                from None

    def _release(self) -> None:
        self.active -= 1

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
