"""The counting pass over a training source: each language's sample read once, as a stream, its
documents chosen (`sample.selected`), cut by each pre-tokenizer the run trains with, and the
distinct chunks counted (`bpe.counting`), a batch of documents per core at a time (the
compiled splitter and counter give up the GIL): memory goes with the distinct chunks, not with
the text. Plain text reaches the compiled counter as UTF-8 bytes, checked there (no Python
string per document), and every thread counts into one `PartedCounter` per pre-tokenizer, a
part per thread, each distinct chunk in the one part its hash picks: no chunk is held twice
and nothing is merged at the end. Each language's tables are kept in the chunk-count cache
(written a slice at a time from the counter), and a language whose tables are all there is
not read at all.

The same pass runs on a Dask cluster (`DaskExecutor.count` in `analyzer.runs.cluster`): a task
per file, the counters merged two by two; the tables are the same, chunk for chunk, as here.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from analyzer.bpe import choice
from analyzer.bpe.counting import ChunkTable, Counter, chunk_counter, count_texts, count_utf8, parted_counter
from analyzer.bpe.pretokenize import Pretokenizer, PretokenizerError, Splitter
from analyzer.bpe.threads import available_cores
from analyzer.corpus.streams import REST_SKIPPED, Batch, FileKind, read_documents, utf8_bytes
from analyzer.errors import SETTING
from analyzer.store import SourceDetail
from analyzer.store.models import SourceFile

from .chunk_cache import ChunkCache, DamagedEntry, Listed, cache_key
from .errors import RunError
from .sample import ALL, selected

COUNT_BATCH_BYTES = 1 << 20
"""Text handed to a counting thread at a time: small enough that a file of a few megabytes (most
languages of a source) keeps every core busy (at 8 MiB, two cores counted 1 GB at 72 MB/s; at
1 MiB, 86 MB/s, with a lower peak), large enough that handing it over costs nothing beside
splitting it."""

ORDER_BITS = 24
"""Bits of an order key for a chunk's place in its batch, and for a batch's place in its file:
(file, batch, chunk) in one int64, so that a chunk's first occurrence is the smallest key."""


@dataclass(frozen=True)
class LanguagePlan:
    """What a run takes of one language of a source."""

    lang: str
    files: tuple[SourceFile, ...]
    budget: int
    threshold: int
    """Documents whose hash falls under it are taken (`sample.ALL`: every one)."""

    @property
    def available(self) -> int:
        return sum(item.bytes for item in self.files)

    @property
    def documents(self) -> int:
        return sum(item.documents for item in self.files)

    def bases(self) -> list[int]:
        """Each file's first document's place in the language's text."""
        return list(itertools.accumulate((item.documents for item in self.files), initial=0))[:-1]


@dataclass(frozen=True)
class SourcePlan:
    """The sample a run takes of a source."""

    source: SourceDetail
    seed: int
    mix: str
    skip_invalid: bool
    languages: dict[str, LanguagePlan]

    def sample_key(self, lang: str) -> tuple:
        """What decides which documents of `lang` are taken (and so its chunks)."""
        plan = self.languages[lang]
        return (self.seed, plan.threshold, self.skip_invalid, self.source.documents,
                self.source.text_field)


@dataclass
class Taken:
    """What a language's sample took, and what it skipped."""

    lang: str
    bytes: int = 0
    documents: int = 0
    skipped_documents: int = 0
    skipped_bytes: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, other: Taken) -> None:
        self.bytes += other.bytes
        self.documents += other.documents
        self.skipped_documents += other.skipped_documents
        self.skipped_bytes += other.skipped_bytes
        self.notes += other.notes

    def document(self, plan: LanguagePlan) -> dict:
        return {"lang": self.lang, **asked(plan), "bytes": self.bytes,
                "documents": self.documents, "skipped_documents": self.skipped_documents,
                "skipped_bytes": self.skipped_bytes, "notes": self.notes}


def asked(plan: LanguagePlan) -> dict:
    """What a run asked of a language and what the source has: recorded from the run's own
    plan, also when its counts come from an entry another run wrote (which may have asked
    another budget of the same sample)."""
    return {"budget": plan.budget, "available_bytes": plan.available,
            "available_documents": plan.documents, "short": plan.budget > plan.available}


def recounted(document: dict, notes: list[str]) -> dict:
    """A language's document with what was found damaged in the cache (and so counted again),
    when anything was."""
    return {**document, "cache_notes": notes} if notes else document


Splitters = dict[str, Splitter | None]
"""Each pre-tokenizer to count with, by its name (`plan.pretokenizer_name`)."""
Progress = Callable[[int], None]
"""Called with how many more bytes of text were read."""


def splitter_key(name: str, splitter: Splitter | None) -> str:
    """A pre-tokenizer's key in the cache: its name and pattern (an extension's base is its
    name and its tokenizer's pattern)."""
    return f"{name}\0{getattr(splitter, 'pattern', '')}"


def table_key(plan: SourcePlan, lang: str, name: str, splitter: Splitter | None) -> str:
    """A table's entry in the cache: the source, the language, the pre-tokenizer (by its
    pattern too), the sample."""
    return cache_key(plan.source.fingerprint, lang, splitter_key(name, splitter),
                     *plan.sample_key(lang))


def count_file(plan: SourcePlan, lang: str, index: int, splitters: Splitters,
               threads: int | None = None) -> tuple[dict[str, Counter], Taken]:
    """The sampled documents of the language's `index`-th file, counted under each
    pre-tokenizer (a task of `DaskExecutor.count`); what was taken.

    One thread reads (decompresses, finds the documents) batches of documents while `threads`
    (default: every core) count them, each batch whole on one thread, into one counter per
    pre-tokenizer that they share (`new_counters`). A chunk's order key is its batch's place,
    so the tables are the same for any number. Given as counters that merge and pickle
    (`chunk_counter`), for the cluster to merge file by file."""
    counters = new_counters(splitters, max(1, threads or available_cores()))
    taken = count_file_into(counters, plan, lang, index, splitters)
    return {key: mergeable(counter) for key, counter in counters.items()}, taken


def new_counters(splitters: Splitters, threads: int) -> dict[str, Counter]:
    """A counter per pre-tokenizer that `threads` threads count into at once (`parted_counter`:
    a part each, a chunk in one part only, so nothing is held twice or merged)."""
    return {key: parted_counter(threads) for key in splitters}


def mergeable(counter: Counter) -> Counter:
    """The counter as one that merges and pickles (`chunk_counter`)."""
    if hasattr(counter, "merge"):
        return counter
    whole = chunk_counter()
    whole.add_items(*counter.items())
    return whole


def count_file_into(counters: dict[str, Counter], plan: SourcePlan, lang: str, index: int,
                    splitters: Splitters, progress: Progress | None = None,
                    threads: int | None = None) -> Taken:
    """`count_file`'s work into `counters` (`new_counters`), on `threads` counting threads
    (default: every core)."""
    language = plan.languages[lang]
    item = language.files[index]
    base = language.bases()[index]
    kind = FileKind(item.compression, item.format)
    before = as_registered(plan.source.name, item)
    # Plain text's lines read as UTF-8 bytes and counted in compiled code, no str made per
    # document, when every pre-tokenizer is compiled.
    engine = choice.extension()
    as_bytes = engine is not None and all(isinstance(splitter, Pretokenizer) and splitter.native
                                          for splitter in splitters.values())
    # What registration found unreadable was refused before (`check_readable`) unless it is
    # to be skipped; what is unreadable only now (changed in place) is refused here, alike.
    batches = read_documents(Path(item.path), kind, documents=plan.source.documents,
                             text_field=plan.source.text_field, skip_invalid=plan.skip_invalid,
                             batch_bytes=COUNT_BATCH_BYTES,
                             utf8_lines=engine.utf8_lines if engine is not None and as_bytes
                             else None)

    def count(number: int, batch: Batch) -> Taken:
        if number >= 1 << ORDER_BITS:
            raise RunError(f"{item.path}: more than {1 << ORDER_BITS:,} batches of text in one "
                           "file; cut it into shards")
        documents = batch.documents
        kept = np.arange(documents)  # the places in the batch of the texts counted
        utf8 = batch.utf8
        texts = batch.texts if utf8 is None else None
        if language.threshold < ALL:
            places = base + batch.first + kept
            chosen = selected(plan.seed, lang, places, language.threshold)
            kept = kept[chosen]
            if utf8 is not None:
                utf8 = utf8.taken(chosen)
            else:
                texts = list(itertools.compress(batch.texts, chosen))
        first = ((index << ORDER_BITS) + number) << ORDER_BITS
        for key, splitter in splitters.items():
            if utf8 is not None and count_utf8(counters[key], utf8.data, utf8.starts, utf8.ends,
                                               splitter, first):
                continue
            if texts is None:  # a pattern that loses a character: `regex` says where
                texts = utf8.texts() if utf8 is not None else batch.texts
            try:
                count_texts(counters[key], texts, splitter, first, threads=1)
            except PretokenizerError as error:  # a pattern of the user's, on this source's text
                if error.text_index is None:
                    raise
                document = batch.first + int(kept[error.text_index]) + 1
                raise RunError(f"{SETTING} {error.name} {error.failure}: training source "
                               f"{plan.source.name!r}, {lang}, {item.path} document "
                               f"{document:,}, {error.detail}; nothing was stored",
                               setting="pretokenizers", value=error.name, language=lang,
                               file=item.path) from None
        found = Taken(lang, documents=len(kept), skipped_documents=batch.skipped_documents,
                      skipped_bytes=batch.skipped_bytes, notes=batch.notes)
        if len(kept) == documents:
            found.bytes = batch.n_bytes
        else:
            found.bytes = utf8.n_bytes if utf8 is not None else utf8_bytes(texts or [])
        return found

    taken = Taken(lang)
    notes: list[tuple[int, list[str]]] = []
    try:
        for number, read, found in _in_parallel(batches, count,
                                                max(1, threads or available_cores())):
            taken.add(found)
            notes.append((number, found.notes))
            if progress:
                progress(read)
    except Exception:
        # A file cut short while it is read can fail as unreadable (a broken stream): said
        # for what it is, a file that changed.
        unchanged_while_read(plan.source.name, item, before)
        raise
    # Raised before anything counted from it is returned, so nothing read from a file that
    # changed is trained on or cached.
    unchanged_while_read(plan.source.name, item, before)
    taken.notes = [note for _, batch_notes in sorted(notes) for note in batch_notes]
    return taken


Stamp = tuple[int, int, int, int]
"""A file's size, modification and change times and inode: any write, truncation or
replacement changes one of them (the change time cannot be set back)."""


def _stamp(status: os.stat_result) -> Stamp:
    return (status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino)


def _again(source: str) -> str:
    return f"register the source again (analyzer sources add {source} ... --replace)"


def as_registered(source: str, item: SourceFile) -> Stamp:
    """The file's stamp now; RunError naming the file if it is gone or its size or time is not
    the one registered."""
    try:
        status = os.stat(item.path)
    except OSError as error:
        raise RunError(f"{item.path} of source {source!r} is gone since it was registered "
                       f"({error.strerror}); {_again(source)}", setting="train_on",
                       value=source, file=item.path) from None
    if (status.st_size, status.st_mtime_ns) != (item.size, item.mtime_ns):
        raise RunError(f"{item.path} of source {source!r} changed since it was registered (its "
                       f"size or time is not the one recorded); {_again(source)}",
                       setting="train_on", value=source, file=item.path)
    return _stamp(status)


def unchanged_while_read(source: str, item: SourceFile, before: Stamp) -> None:
    """RunError naming the file if it changed while it was read (its stamp is not `before`'s),
    or if what was read is not the content registered (its SHA-256, read again now, mostly
    from the page cache: a rewrite that kept the size and set the time back)."""
    def changed() -> RunError:
        return RunError(f"{item.path} of source {source!r} changed while this run read it (cut "
                        "short, rewritten or replaced); nothing read from it is used or "
                        "cached. Run again once it is whole; if its content changed for good, "
                        f"{_again(source)}", setting="train_on", value=source, file=item.path)

    try:
        if _stamp(os.stat(item.path)) != before:
            raise changed()
        if not item.sha256:
            return
        with open(item.path, "rb") as file:
            digest = hashlib.file_digest(file, "sha256").hexdigest()
        if _stamp(os.stat(item.path)) != before:
            raise changed()
    except OSError:
        raise changed() from None
    if digest != item.sha256:
        raise RunError(f"{item.path} of source {source!r} is not the file registered: its size "
                       "and time are, its SHA-256 is not (rewritten, its time set back); "
                       f"nothing read from it is used or cached; {_again(source)}",
                       setting="train_on", value=source, file=item.path)


def _in_parallel(batches: Iterator[Batch], count: Callable[[int, Batch], Taken],
                 threads: int) -> Iterator[tuple[int, int, Taken]]:
    """`(number, bytes read, what count took)` of each batch as it is counted: a thread reads
    the batches, `threads` threads count them. An error of the reading or
    the counting stops them all and is raised here; so is Ctrl-C or SIGTERM, which lands here
    (the main thread) while it waits."""
    todo: queue.Queue = queue.Queue(maxsize=threads + 1)
    done: queue.Queue = queue.Queue()
    stop = threading.Event()
    end = object()

    def put(into: queue.Queue, item) -> bool:
        while not stop.is_set():
            try:
                into.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for number, batch in enumerate(batches):
                if not put(todo, (number, batch)):
                    return
        except BaseException as error:  # said where the batches are counted: in the caller
            done.put(error)
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()  # the file closed here, in the thread that read it
        for _ in range(threads):
            put(todo, end)

    def work() -> None:
        try:
            while not stop.is_set():
                try:
                    item = todo.get(timeout=0.1)
                except queue.Empty:
                    continue
                if item is end:
                    break
                number, batch = item
                done.put((number, batch.n_bytes, count(number, batch)))
        except BaseException as error:
            done.put(error)
        done.put(end)

    running = [threading.Thread(target=read, daemon=True)]
    running += [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for thread in running:
        thread.start()
    try:
        finished = 0
        while finished < threads:
            item = done.get()
            if item is end:
                finished += 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    except BaseException:
        # The threads stop at their next batch; one inside a read (a slow disk) or a count
        # is not waited for, so an error or a signal ends the run now. Its counters are
        # dropped with the run.
        stop.set()
        raise
    stop.set()
    for thread in running:
        thread.join()


def check_readable(plan: SourcePlan) -> None:
    """RunError, before anything is read, for a file that had documents it could not read when
    it was registered (unless they are to be skipped)."""
    if plan.skip_invalid:
        return
    for language in plan.languages.values():
        for item in language.files:
            if item.problem:
                problem = item.problem.removesuffix(f"; {REST_SKIPPED}")  # not so in this run
                why = (f"{item.invalid_documents:,} documents could not be read; "
                       "{setting:skip_invalid} skips them" if item.invalid_documents else
                       "{setting:skip_invalid} uses the text before the break")
                raise RunError(f"{problem} ({why})", setting="skip_invalid", file=item.path)


def cached_languages(plan: SourcePlan, splitters: Splitters, cache: ChunkCache
                     ) -> tuple[dict[str, dict], dict[str, list[str]]]:
    """The languages whose every table is in the cache, each entry verified (`read_entry`):
    what each took, from its entries, with what this run asked (`asked`); and, by language, a
    note of each damaged entry (its language is counted again, and the entry written anew)."""
    found: dict[str, dict] = {}
    damaged: dict[str, list[str]] = {}
    for lang, language in plan.languages.items():
        keys = {name: table_key(plan, lang, name, splitter)
                for name, splitter in splitters.items()}
        present = [cache.has(key) for key in keys.values()]  # each checked: none skipped
        if not present or not all(present):
            continue
        taken = None
        for name, key in keys.items():
            try:
                about = cache.verify(key)
            except DamagedEntry as error:
                damaged.setdefault(lang, []).append(
                    f"the chunk-count cache's entry for {lang} ({name}) was damaged ({error}): "
                    "counted again")
                continue
            if taken is None and isinstance(about.get("taken"), dict):
                taken = about["taken"]
        if lang not in damaged and taken is not None:
            found[lang] = {**taken, **asked(language)}
    return found, damaged


def count_locally(plan: SourcePlan, splitters: Splitters, cache: ChunkCache,
                  progress: Progress | None = None, stage: Callable[[str], None] | None = None,
                  threads: int | None = None) -> tuple[dict[tuple[str, str], Path],
                                                        dict[str, dict]]:
    """Every language's tables (in the cache: `{(lang, pre-tokenizer name): path}`) and what
    each took; a language already in the cache is not read.

    A language's tables are written by a thread of their own while the next language is
    counted (so at most two languages' counters are held at once)."""
    check_readable(plan)
    cached, damaged = cached_languages(plan, splitters, cache)
    threads = max(1, threads or available_cores())
    tables: dict[tuple[str, str], Path] = {}
    taken_by_language: dict[str, dict] = {}
    saver = _Saver()
    for lang, language in plan.languages.items():
        keys = {name: table_key(plan, lang, name, splitter) for name, splitter in splitters.items()}
        if lang in cached:
            if stage:
                stage(f"{lang}: counted before, taken from the chunk-count cache (no text read)")
            tables.update({(lang, key): cache.path(entry) for key, entry in keys.items()})
            taken_by_language[lang] = cached[lang]
            if progress:
                progress(language.available)
            continue
        if stage:
            for note in damaged.get(lang, []):
                stage(note)
            stage(f"counting {lang}")
        counters = new_counters(splitters, threads)
        taken = Taken(lang)
        for index in range(len(language.files)):
            taken.add(count_file_into(counters, plan, lang, index, splitters, progress, threads))
        taken_by_language[lang] = recounted(taken.document(language), damaged.get(lang, []))
        saver.submit(_save_language, cache, keys, counters, plan, lang, splitters,
                     taken_by_language[lang])
    for paths in saver.results():
        tables.update(paths)
    return tables, taken_by_language


def _save_language(cache: ChunkCache, keys: dict[str, str], counters: dict[str, Counter],
                   plan: SourcePlan, lang: str, splitters: Splitters, taken: dict
                   ) -> dict[tuple[str, str], Path]:
    """A language's counters written to the cache, one table at a time (each counter's memory
    given back before the next is written)."""
    paths = {}
    for key, entry in keys.items():
        counter = counters.pop(key)
        # A counter that lists its chunks a slice at a time is written so, never whole twice.
        table = cast(Listed, counter) if hasattr(counter, "rewind") else ChunkTable.of(counter)
        paths[(lang, key)] = save_table(cache, entry, table, plan, lang, key, splitters[key],
                                        taken)
        del counter, table  # its memory given back before the next is written
    return paths


class _Saver:
    """Runs one job at a time on a thread of its own, behind the caller: `submit` waits for
    the job before to end (raising its error), `results` for the last. A daemon thread, so
    that Ctrl-C or SIGTERM ends the run without waiting for a write (the cache removes the
    temporary file of a run that did not end: `ChunkCache`)."""

    def __init__(self) -> None:
        self.done: list = []
        self.pending: threading.Thread | None = None
        self.error: BaseException | None = None

    def submit(self, job: Callable, *args) -> None:
        self._wait()

        def run() -> None:
            try:
                self.done.append(job(*args))
            except BaseException as error:  # said in the caller, at its next wait
                self.error = error

        self.pending = threading.Thread(target=run, daemon=True)
        self.pending.start()

    def results(self) -> list:
        self._wait()
        return self.done

    def _wait(self) -> None:
        if self.pending is not None:
            self.pending.join()
            self.pending = None
        if self.error is not None:
            error, self.error = self.error, None
            raise error


def save_table(cache: ChunkCache, entry: str, table: ChunkTable | Listed, plan: SourcePlan,
               lang: str, name: str, splitter: Splitter | None, taken: dict) -> Path:
    return cache.save(entry, table, {"source": plan.source.name,
                                     "fingerprint": plan.source.fingerprint, "lang": lang,
                                     "pretokenizer": name,
                                     "pattern": getattr(splitter, "pattern", None),
                                     "sample": list(map(str, plan.sample_key(lang))),
                                     "chunks": len(table), "taken": taken})
