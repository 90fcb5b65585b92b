"""Running a run's trainings on a Dask distributed cluster (optional: `analyzer[dask]`).

The jobs are the local pool's (one per vocabulary: train, then count every measured text at
every size). The texts go to the cluster once, inside the graph of one task whose result they
are: the scheduler keeps that graph, so when a worker holding the result dies, the task runs
again on another (scattered data has no such recipe). Each job takes its own texts from that
result, which workers pass to each other; the jobs' own graphs hold no texts.
Results come back to the command, which stores them in its one final transaction as always:
workers never touch the database. A job whose worker dies is run again on another (Dask
reschedules it); a job that raises is retried `RETRIES` times, then fails the run with the
worker's error. Ctrl-C cancels the futures.

    with connect("tcp://10.0.0.5:8786") as executor:     # or connect(None): a LocalCluster
        records = executor.run(plans, texts, report)

`DaskExecutor` is an `executor.Executor`, as the local pool's `LocalExecutor` is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from analyzer.bpe.counting import ChunkTable
from analyzer.bpe.pretokenize import Pretokenizer
from analyzer.errors import SETTING, AnalyzerError
from analyzer.headroom import Headroom, Limit, headroom
from analyzer.store import VocabularyRecord

from . import memory
from .builders import build_vocabulary
from .chunk_cache import ChunkCache
from .costs import LocalTraining
from .counting import (
    Progress,
    SourcePlan,
    Splitters,
    cached_languages,
    check_readable,
    count_file,
    count_locally,
    recounted,
    save_table,
    table_key,
)
from .errors import RunError
from .plan import JobPlan, Report, SourceTables
from .resolution import check_scheduler

RETRIES = 2
"""How many times a job that raised is submitted again before the run fails."""

CONNECT_TIMEOUT = "5s"
"""How long to wait for a scheduler before saying it cannot be reached."""
GREETING_TIMEOUT = 5.0
"""Seconds a scheduler has to greet a new connection (it does so at once)."""
GREETING = b"pickle-protocol"
"""A word of the handshake a Dask scheduler sends first on every connection (msgpack)."""

EXTRA = "pip install 'analyzer[dask]'"


def _distributed():
    try:
        import distributed
    except ImportError:
        raise RunError(f"{SETTING} dask needs Dask distributed: {EXTRA}",
                       setting="executor") from None
    return distributed


class DaskExecutor:
    """A connected client (and the LocalCluster it started, if it started one)."""

    def __init__(self, client, cluster=None):
        self.client, self.cluster = client, cluster

    @property
    def address(self) -> str:
        return self.client.scheduler.address

    def memory(self) -> tuple[Limit | None, int]:
        """The smallest memory limit of the cluster's workers, and the most jobs one of them runs
        at once (its threads): where a training's predicted peak must fit."""
        workers = self.client.scheduler_info().get("workers", {}).values()
        limits = [worker["memory_limit"] for worker in workers if worker.get("memory_limit")]
        threads = max((worker.get("nthreads", 1) for worker in workers), default=1)
        return (Limit(min(limits), "the smallest Dask worker's memory limit")
                if limits else None), threads

    def check_memory(self, plans: list[JobPlan], source: SourceTables,
                     local: Sequence[LocalTraining], stage: Callable[[str], None], *,
                     cached: bool, sample: SourcePlan | None) -> None:
        """The jobs against the smallest worker's memory limit, each worker running as many
        at once as it has threads (`memory()`); the local trainings (an extension) against
        this process's headroom."""
        room = headroom()
        limit, at_once = self.memory()
        # A worker's own process holds about what this one does before training.
        memory.check_memory(plans, at_once, Headroom(room.held, 0, [limit] if limit else []),
                            stage, cached=cached, cluster=True, sample=sample, source=source)
        if local:
            memory.check_memory([], 1, room, stage, cached=cached, local=local, sample=sample,
                                source=source)

    def run(self, plans: list[JobPlan], texts: dict[str, list[str]],
            report: Report | None = None) -> list[VocabularyRecord]:
        """Every job's record, in plan order."""
        distributed = _distributed()
        report = report or (lambda *args: None)
        if not plans:
            return []
        # The texts go to the cluster once, in the graph of a task whose result they are (not
        # scattered: scattered data has no recipe, and jobs were seen to be cancelled when a
        # worker holding it died). The task can run again wherever a worker is left; workers
        # fetch its result from each other. That one graph is as large as the texts by design,
        # so distributed's warning about large graphs says nothing here.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sending large graph")
            shared = self.client.submit(_texts, Texts(texts), pure=False,
                                        key=f"texts-{os.getpid()}-{id(plans)}")
        # The biggest first, as the local pool does: the longest job starts earliest.
        order = sorted(range(len(plans)), key=lambda i: -plans[i].work(texts))
        futures = {}
        results: dict[int, VocabularyRecord] = {}
        try:
            for i in order:
                futures[self.client.submit(_build_planned, plans[i], shared, pure=False,
                                           retries=RETRIES, key=f"vocabulary-{i}-{os.getpid()}-"
                                           f"{id(plans)}")] = i
            # Said once every job is submitted: a Ctrl-C prompted by it then finds no future
            # half-made (one interrupted in its constructor complains when it is collected).
            for i in order:
                report(plans[i].label, "train", 0, 1)
            for future in distributed.as_completed(list(futures), loop=self.client.loop):
                i = futures[future]
                try:
                    results[i] = future.result()
                except Exception as error:
                    raise RunError(f"the {plans[i].label} vocabulary failed on a Dask worker "
                                   f"(after {RETRIES} retries): {type(error).__name__}: "
                                   f"{error}") from None
                report(plans[i].label, "done", 1, 1)
        except BaseException:
            self.client.cancel(list(futures))  # Ctrl-C, or a job that failed: stop the rest
            raise
        return [results[i] for i in range(len(plans))]

    @property
    def spread(self) -> DaskSpread:
        """Local builders' tasks (a production tokenizer's measurement) on the workers."""
        return DaskSpread(self)

    def count(self, plan: SourcePlan, splitters: Splitters, cache: ChunkCache,
              progress: Progress | None = None, stage: Callable[[str], None] | None = None
              ) -> tuple[dict[tuple[str, str], Path], dict[str, dict]]:
        """The counting pass on the cluster: a task per file of every language not in the
        cache (the workers read the files where the source's paths say: a folder they share),
        each language's counters merged two by two, its tables written here, in the cache. A
        pre-tokenizer of an extended tokenizer's own is counted here, where its library is
        (that counting said by `stage`, as the local executor's is)."""
        _distributed()
        check_readable(plan)
        portable: Splitters = {name: splitter for name, splitter in splitters.items()
                               if splitter is None or isinstance(splitter, Pretokenizer)}
        here = {name: splitter for name, splitter in splitters.items() if name not in portable}
        tables, taken = count_locally(plan, here, cache, progress, stage) if here else ({}, {})
        cached, damaged = cached_languages(plan, portable, cache)
        merged = {}
        try:
            for lang, language in plan.languages.items():
                if lang in cached:
                    tables.update({(lang, name): cache.path(table_key(plan, lang, name, splitter))
                                   for name, splitter in portable.items()})
                    taken[lang] = cached[lang]
                    if progress and not here:
                        progress(language.available)
                    continue
                parts = [self.client.submit(_count_file_task, plan, lang, index, portable,
                                            pure=False, key=f"count-{lang}-{index}-{os.getpid()}")
                         for index in range(len(language.files))]
                while len(parts) > 1:  # a tree: each merge of two, on the workers
                    parts = [self.client.submit(_merge_counts, *parts[k:k + 2], pure=False)
                             if k + 1 < len(parts) else parts[k] for k in range(0, len(parts), 2)]
                merged[lang] = parts[0]
            for lang in list(merged):
                try:
                    counters, found = merged[lang].result()
                except RunError:
                    raise
                except Exception as error:
                    raise RunError(f"counting {lang} on the Dask cluster failed: "
                                   f"{type(error).__name__}: {error}") from None
                # Here now: the workers let go of them (else they would hold every language's
                # counters until the last is written, the whole source's tables at once).
                merged.pop(lang).release()
                if progress and not here:
                    progress(plan.languages[lang].available)
                document = recounted(found.document(plan.languages[lang]),
                                     damaged.get(lang, []))
                if lang in taken and damaged.get(lang):  # counted here too (`here`): both said
                    taken[lang] = recounted(taken[lang], taken[lang].get("cache_notes", [])
                                            + damaged[lang])
                taken.setdefault(lang, document)
                for name, splitter in portable.items():
                    entry = table_key(plan, lang, name, splitter)
                    tables[(lang, name)] = save_table(cache, entry, ChunkTable.of(counters[name]),
                                                      plan, lang, name, splitter, taken[lang])
                del counters
        except BaseException:
            self.client.cancel(list(merged.values()))
            raise
        return tables, taken

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()


class DaskSpread:
    """`runs.spread.Spread` on a cluster: the function goes to it once (as a task's result,
    like the texts), then a task per item, each retried as a job is; results in order."""

    in_process = False

    def __init__(self, executor: DaskExecutor):
        self.executor = executor

    def map(self, function, items, labels, report=None) -> list:
        distributed = _distributed()
        client = self.executor.client
        report = report or (lambda *args: None)
        if not items:
            return []
        tag = f"{os.getpid()}-{id(items)}"
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sending large graph")
            shared = client.submit(_same, function, pure=False, key=f"spread-{tag}")
        futures = {}
        results = {}
        try:
            for i, item in enumerate(items):
                futures[client.submit(_apply, shared, item, pure=False, retries=RETRIES,
                                      key=f"spread-{i}-{tag}")] = i
            for label in labels:
                report(label, "count", 0, 1)
            for future in distributed.as_completed(list(futures), loop=client.loop):
                i = futures[future]
                try:
                    results[i] = future.result()
                except AnalyzerError:  # its message names what failed, and where
                    raise
                except Exception as error:
                    raise RunError(f"{labels[i]} failed on a Dask worker (after {RETRIES} "
                                   f"retries): {type(error).__name__}: {error}") from None
                report(labels[i], "done", 1, 1)
        except BaseException:
            client.cancel(list(futures))
            raise
        return [results[i] for i in range(len(items))]


def _same(value):
    return value


def _apply(function, item):
    """On a worker: one task of a spread, its progress not reported (the client reports)."""
    return function(item, lambda *args: None)


class Texts:
    """The run's texts as one object: Dask then pickles them in one go (a dict of lists it
    would walk item by item, 87,000 strings for NTREX: 6.5 s instead of 0.35 s)."""

    def __init__(self, by_language: dict[str, list[str]]):
        self.by_language = by_language


def _texts(texts: Texts) -> Texts:
    return texts


def _count_file_task(plan: SourcePlan, lang: str, index: int, splitters: Splitters):
    """On a worker: one file's sampled documents counted; a file it cannot read fails the
    run, naming the file and the worker."""
    try:
        counters, taken = count_file(plan, lang, index, splitters)
    except Exception as error:
        from distributed import get_worker

        where = plan.languages[lang].files[index].path
        worker = get_worker().address
        if isinstance(error, AnalyzerError):  # its message names the file and the place
            raise RunError(f"on the Dask worker {worker}: {error}", file=where) from None
        raise RunError(f"{where} could not be counted on the Dask worker {worker}: "
                       f"{type(error).__name__}: {error}", file=where) from None
    return counters, taken


def _merge_counts(left, right):
    """On a worker: two parts of a language's counting, as one."""
    counters, taken = left
    for name, counter in right[0].items():
        counters[name].merge(counter)
    taken.add(right[1])
    return counters, taken


def _build_planned(plan: JobPlan, texts: Texts) -> VocabularyRecord:
    """On a worker: the job's texts from the run's (the texts task's result), then the local
    pool's job."""
    return build_vocabulary(plan.job(texts.by_language))


def check_greeting(address: str, timeout: float = GREETING_TIMEOUT) -> None:
    """RunError unless what listens at a tcp:// address greets as a Dask scheduler does.

    A scheduler sends its handshake as soon as a connection opens; Dask's client reads the
    first 8 bytes of whatever comes as a frame length, so another server (a web server's
    "HTTP/1.1 400", say) made it allocate exabytes and fail with a MemoryError. So the address
    is asked first, in plain TCP, and anything else is said in words."""
    if not address.startswith("tcp://"):
        return  # tls, ucx, ...: their own handshakes come first; Dask's checks stand
    host, _, port = address[len("tcp://"):].rpartition(":")
    host = host.strip("[]")
    received = b""
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as connection:
            connection.settimeout(timeout)
            while GREETING not in received and len(received) < 4096:
                piece = connection.recv(4096)
                if not piece:
                    break
                received += piece
    except TimeoutError:
        if not received:
            raise RunError(f"{SETTING} {address} is not a Dask scheduler: what listens there "
                           f"said nothing within {timeout:g} s, and a scheduler greets every "
                           "connection at once (is it the scheduler's port, 8786 by default, and "
                           "not its dashboard's or another server's?)", setting="scheduler",
                           value=address) from None
    except OSError as error:
        raise RunError(f"cannot reach the Dask scheduler at {address} ({error.strerror or error}); "
                       "start one with `dask scheduler`, or check the address",
                       setting="scheduler", value=address) from None
    if GREETING not in received:
        said = received[:40].decode("latin-1").split("\r\n")[0]
        what = (f"it answered as a web server does ({said!r})" if received.startswith(b"HTTP/")
                else f"it sent {len(received)} bytes that are no scheduler's greeting"
                if received else "it closed the connection without a word")
        raise RunError(f"{SETTING} {address} is not a Dask scheduler: {what}; give the "
                       "scheduler's address (tcp://HOST:8786 by default)", setting="scheduler",
                       value=address)


@contextlib.contextmanager
def connect(scheduler: str | None, workers: int | None = None) -> Iterator[DaskExecutor]:
    """A client of the scheduler at `scheduler`, or of a LocalCluster (processes, one thread
    each, `workers` of them: by default one per core) when it is None. RunError, within a few
    seconds, when the scheduler cannot be reached."""
    distributed = _distributed()
    cluster = None
    if scheduler is None:
        try:
            # No dashboard, and the scheduler's HTTP server (it always has one) on a free port:
            # on the default 8787 a second cluster warns that the port is taken.
            cluster = distributed.LocalCluster(
                n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                dashboard_address=None, silence_logs=logging.CRITICAL,  # no log noise for a user
                scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"})
        except (RuntimeError, OSError) as error:
            raise RunError(f"could not start a local Dask cluster: {error}") from None
        target = cluster
    else:
        check_scheduler(scheduler)
        check_greeting(scheduler)
        target = scheduler
    try:
        client = distributed.Client(target, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as error:
        if cluster is not None:
            cluster.close()
        raise RunError(f"cannot reach the Dask scheduler at {scheduler} within "
                       f"{CONNECT_TIMEOUT} ({type(error).__name__}: {error}); start one with "
                       "`dask scheduler`, or check the address") from None
    executor = DaskExecutor(client, cluster)
    try:
        yield executor
    finally:
        executor.close()
