"""One job per vocabulary: train it, then count every measured text at every size.

Jobs are plain data, so they run the same in this process or in a worker process; workers
report progress through a queue that the parent turns into progress bars. A worker dies with
its parent: if the command is killed outright (SIGKILL), nothing of it keeps running.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field

from analyzer import bpe
from analyzer.bpe.pretokenize import NONE
from analyzer.store import StoredMerge, VocabKind, VocabularyRecord

Report = Callable[[str, str, int, int], None]
"""report(scope, phase, done, total); phase is "train", "count" or "done"."""

STALL_ENV = "ANALYZER_TEST_STALL"
"""A test hook: when set, a training waits after its first progress report until the process
is interrupted or killed, so tests and benchmarks/fault_injection.py can stop a run at a known
point instead of after a guessed delay."""

STALL_ONCE_ENV = "ANALYZER_TEST_STALL_ONCE"
"""A test hook: a path. The first training to claim it (by creating PATH.claimed) writes its
process id to PATH and then waits as with STALL_ENV; every other training, a retry of that one
included, runs through. With PATH a named pipe, the test's read of it is the event "a job has
begun, in this process", so it can kill that worker at a known point and watch the retry."""


def _stalls() -> bool:
    if os.environ.get(STALL_ENV):
        return True
    marker = os.environ.get(STALL_ONCE_ENV)
    if not marker:
        return False
    try:
        os.close(os.open(f"{marker}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    with open(marker, "w") as file:  # a named pipe: blocks until the test reads
        file.write(str(os.getpid()))
    return True


@dataclass
class VocabularyJob:
    kind: VocabKind
    scope: str
    """The vocabulary's name in the run: "shared", "parity", or the language it is trained on."""
    train_texts: dict[str, list[str]]
    """The training texts, by language."""
    measure: dict[str, list[str]]
    """The measured texts of every language this vocabulary counts."""
    sizes: list[int]
    tie_break: str
    min_pair_count: int
    pretokenizer: str = NONE
    """The pre-tokenizer's name as given (built-in or re:PATTERN)."""
    weights: dict[str, int] = field(default_factory=dict)
    """The training mix: each unit of a language counts this many times (default 1)."""
    global_merges: int = 0
    """Parity-aware: the first merges, chosen over all languages together."""
    dev: dict[str, list[str]] | None = None
    """Parity-aware: the texts whose token counts decide whose turn it is (default: the
    training texts)."""

    @property
    def work(self) -> int:
        return sum(len(t) for texts in self.train_texts.values() for t in texts)

    @property
    def label(self) -> str:
        return job_label(self.scope, self.pretokenizer)


def job_label(scope: str, pretokenizer: str) -> str:
    """How progress names a job: its scope, and its pre-tokenizer if it has one."""
    return scope if pretokenizer == NONE else f"{scope} [{pretokenizer}]"


@dataclass
class JobPlan:
    """A job without its texts: which languages and units it trains on and counts. Texts
    travel once to where the jobs run (a Dask cluster), and each job takes its own from them."""

    kind: VocabKind
    scope: str
    train_on: list[str]
    count: list[str]
    train_units: list[int]
    measured_units: list[int]
    sizes: list[int]
    tie_break: str
    min_pair_count: int
    pretokenizer: str = NONE
    weights: dict[str, int] = field(default_factory=dict)
    global_merges: int = 0
    dev_measured: bool = False
    """Parity-aware with a holdout: the held-out (measured) units decide whose turn it is."""

    @property
    def label(self) -> str:
        return job_label(self.scope, self.pretokenizer)

    def job(self, texts: dict[str, list[str]]) -> VocabularyJob:
        def units(languages: list[str], which: list[int]) -> dict[str, list[str]]:
            return {lang: [texts[lang][u] for u in which] for lang in languages}

        return VocabularyJob(
            self.kind, self.scope, units(self.train_on, self.train_units),
            units(self.count, self.measured_units), self.sizes, self.tie_break,
            self.min_pair_count, self.pretokenizer, weights=self.weights,
            global_merges=self.global_merges,
            dev=units(self.train_on, self.measured_units) if self.dev_measured else None)


def build_vocabulary(job: VocabularyJob, report: Report | None = None) -> VocabularyRecord:
    """Train at the largest size; every smaller size is a prefix, so one replay counts all."""
    largest = job.sizes[-1]
    report = report or (lambda *args: None)
    step = max(1, (largest - 256) // 100)

    stall = _stalls()

    reported = [-1]  # the last step reported: the engine calls after each block of merges

    def on_merge(done: int, total: int) -> None:
        if done // step != reported[0] or done == total or stall:
            reported[0] = done // step
            report(job.label, "train", done, total)
        while stall:
            time.sleep(0.05)  # until a signal ends the process (KeyboardInterrupt here)

    start = time.perf_counter()
    training = bpe.train_by_language(
        job.train_texts, largest, parity=job.kind == VocabKind.PARITY, dev=job.dev,
        global_merges=job.global_merges, pretokenizer=job.pretokenizer, weights=job.weights or None,
        min_pair_count=job.min_pair_count, tie_break=job.tie_break, progress=on_merge)
    seconds = time.perf_counter() - start
    report(job.label, "count", 0, 1)
    vocabulary = bpe.Vocabulary(training.merges, job.pretokenizer)
    # A vocabulary that stopped early has no larger sizes: those equal its final size.
    reachable = sorted({min(size, vocabulary.size) for size in job.sizes})
    languages = list(job.measure)
    texts = [text for lang in languages for text in job.measure[lang]]
    measured = vocabulary.measure(texts, reachable, roundtrip=True)
    counts: dict[int, dict[str, list[int]]] = {}
    for size in job.sizes:
        flat = measured.counts[min(size, vocabulary.size)]
        counts[size], offset = {}, 0
        for lang in languages:
            n = len(job.measure[lang])
            counts[size][lang] = flat[offset:offset + n]
            offset += n
    statistics = dict(zip(languages, vocabulary.token_statistics(
        [job.measure[lang] for lang in languages], reachable)))
    report(job.label, "done", 1, 1)
    pretokenizer = vocabulary.pretokenizer
    chunks = None
    if measured.chunks is not None and job.kind == VocabKind.SHARED:  # it measures every language
        chunks, offset = {}, 0
        for lang in languages:
            chunks[lang] = measured.chunks[offset:offset + len(job.measure[lang])]
            offset += len(job.measure[lang])
    return VocabularyRecord(
        scope=job.scope, kind=job.kind, size=largest, counts=counts,
        trained_bytes=training.n_bytes, merges_learned=len(training.merges),
        stop_reason=training.stop_reason, seconds=round(seconds, 3),
        roundtrip_ok=measured.roundtrip_ok,
        merges=[StoredMerge(left, right, new_id, count, vocabulary.token_bytes(new_id))
                for ((left, right), new_id), count in zip(training.merges, training.counts)],
        pretokenizer=job.pretokenizer, pattern=pretokenizer.pattern if pretokenizer else None,
        chunks=chunks,
        chosen=training.chosen if job.kind == VocabKind.PARITY else None,
        trained_replacements=training.replaced,
        measured_replacements={lang: found.replaced for lang, found in statistics.items()},
        histograms={size: {lang: found.histograms[min(size, vocabulary.size)]
                           for lang, found in statistics.items()} for size in job.sizes},
    )


def run_jobs(jobs: list[VocabularyJob], workers: int, report: Report | None = None
             ) -> list[VocabularyRecord]:
    """Build every vocabulary, the biggest first, in `workers` processes; results in job order."""
    if workers <= 1 or len(jobs) <= 1:
        return [build_vocabulary(job, report) for job in jobs]
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    messages = context.Queue()
    results: dict[int, VocabularyRecord] = {}
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i].work)
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context,
                             initializer=_init_worker, initargs=(messages, os.getpid())) as pool:
        pending = {pool.submit(_build_in_worker, jobs[i]): i for i in order}
        try:
            while pending:
                done, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                _drain(messages, report)
                for future in done:
                    results[pending.pop(future)] = future.result()
            _drain(messages, report)
        except BaseException:
            # Ctrl-C or a failed job: stop the other workers now rather than let the pool
            # wait for their trainings to finish.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return [results[i] for i in range(len(jobs))]


_worker_queue = None


def _init_worker(messages, parent: int) -> None:
    global _worker_queue
    _worker_queue = messages
    die_with_parent(parent)
    # Ctrl-C in a terminal reaches the whole process group: the parent stops the workers
    # itself, so a worker does not also print a KeyboardInterrupt traceback of its own. And
    # the parent's SIGTERM handler (which turns SIGTERM into an interrupt) is not the
    # worker's: the parent stops a worker with SIGTERM, which must end it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """End this process when `parent` ends, however it ends (SIGKILL included).

    On Linux the kernel does it (prctl PR_SET_PDEATHSIG); elsewhere a daemon thread watches
    the parent's pid. Either way, a parent that died before this ran is noticed at once.
    """
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:
        os._exit(1)  # the parent is already gone
    if not armed:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _build_in_worker(job: VocabularyJob) -> VocabularyRecord:
    messages = _worker_queue
    assert messages is not None, "the pool's initializer sets the queue"
    return build_vocabulary(job, lambda *message: messages.put(message))


def _drain(messages, report: Report | None) -> None:
    while True:
        try:
            message = messages.get_nowait()
        except queue.Empty:
            return
        if report is not None:
            report(*message)
