"""One job per vocabulary: train it, then count every measured text at every size.

Jobs are plain data, so they run the same in this process or in a process of their own; those
report progress through a queue that the parent turns into progress bars. A job's process dies
with its parent: if the command is killed outright (SIGKILL), nothing of it keeps running.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from analyzer import bpe
from analyzer.bpe.pretokenize import NONE
from analyzer.bpe.threads import THREADS_ENV, available_cores
from analyzer.store import StoredMerge, VocabKind, VocabularyRecord

from .resolution import RunError

Report = Callable[[str, str, int, int], None]
"""report(scope, phase, done, total); phase is "train", "count" or "done"."""


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
    """The pre-tokenizer's name as given (built-in, re:PATTERN or split:PATTERN)."""
    weights: dict[str, int] = field(default_factory=dict)
    """The training mix: each unit of a language counts this many times (default 1)."""
    global_merges: int = 0
    """Parity-aware: the first merges, chosen over all languages together."""
    dev: dict[str, list[str]] | None = None
    """Parity-aware: the texts whose token counts decide whose turn it is (default: the
    training texts)."""
    transition: int | None = None
    """SuperBPE: the size where its second stage starts (see `analyzer.runs.superbpe`)."""

    @property
    def work(self) -> int:
        return sum(len(t) for texts in self.train_texts.values() for t in texts)

    @property
    def label(self) -> str:
        return job_label(self.scope, self.pretokenizer, self.kind, self.sizes)


def job_label(scope: str, pretokenizer: str, kind: VocabKind | None = None,
              sizes: list[int] | None = None) -> str:
    """How progress names a job: its scope, its pre-tokenizer if it has one, and the size of a
    job that trains one size (Unigram and WordPiece: each size is its own training).

    >>> job_label("unigram", "words", VocabKind.UNIGRAM, [4096])
    'unigram [words] size 4096 (its own training)'
    """
    label = scope if pretokenizer == NONE else f"{scope} [{pretokenizer}]"
    if kind is not None and not kind.has_merges and sizes:
        label += f" size {sizes[0]} (its own training)"
    return label


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
    transition: int | None = None
    """SuperBPE: the size where its second stage starts."""

    @property
    def label(self) -> str:
        return job_label(self.scope, self.pretokenizer, self.kind, self.sizes)

    def job(self, texts: dict[str, list[str]]) -> VocabularyJob:
        def units(languages: list[str], which: list[int]) -> dict[str, list[str]]:
            return {lang: [texts[lang][u] for u in which] for lang in languages}

        return VocabularyJob(
            self.kind, self.scope, units(self.train_on, self.train_units),
            units(self.count, self.measured_units), self.sizes, self.tie_break,
            self.min_pair_count, self.pretokenizer, weights=self.weights,
            global_merges=self.global_merges,
            dev=units(self.train_on, self.measured_units) if self.dev_measured else None,
            transition=self.transition)


def progress_reporter(job: VocabularyJob, report: Report, largest: int) -> bpe.Progress:
    """The engine's progress callback for a job: a report about every hundredth of its merges
    (the engine calls after each block of merges) and at the end."""
    step = max(1, (largest - 256) // 100)
    reported = [-1]  # the last step reported

    def on_merge(done: int, total: int) -> None:
        if done // step != reported[0] or done == total:
            reported[0] = done // step
            report(job.label, "train", done, total)

    return on_merge


def split_by_language(flat: list[int], measure: dict[str, list[str]]) -> dict[str, list[int]]:
    """Counts of the measured texts, all languages in a row, back into `{lang: counts}`."""
    by_language, offset = {}, 0
    for lang, texts in measure.items():
        by_language[lang] = flat[offset:offset + len(texts)]
        offset += len(texts)
    return by_language


def build_vocabulary(job: VocabularyJob, report: Report | None = None) -> VocabularyRecord:
    """Train at the largest size; every smaller size is a prefix, so one replay counts all."""
    if job.kind.two_stages:
        from .superbpe import build_superbpe

        return build_superbpe(job, report)
    if not job.kind.has_merges:
        from .algorithms import build_library_vocabulary

        return build_library_vocabulary(job, report)
    largest = job.sizes[-1]
    report = report or (lambda *args: None)
    on_merge = progress_reporter(job, report, largest)
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
    counts = {size: split_by_language(measured.counts[min(size, vocabulary.size)], job.measure)
              for size in job.sizes}
    statistics = dict(zip(languages, vocabulary.token_statistics(
        [job.measure[lang] for lang in languages], reachable)))
    report(job.label, "done", 1, 1)
    pretokenizer = vocabulary.pretokenizer
    chunks = None
    if measured.chunks is not None and job.kind == VocabKind.SHARED:  # it measures every language
        chunks = split_by_language(measured.chunks, job.measure)
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
        replaced_in_training=training.replaced_by_language,
        replaced_in_measured={lang: found.replaced for lang, found in statistics.items()},
        histograms={size: {lang: found.histograms[min(size, vocabulary.size)]
                           for lang, found in statistics.items()} for size in job.sizes},
    )


def run_jobs(jobs: list[VocabularyJob], workers: int, report: Report | None = None
             ) -> list[VocabularyRecord]:
    """Build every vocabulary, the biggest first, in up to `workers` processes at a time;
    results in job order.

    One process per job (forked where the platform can: it inherits its job, nothing is
    pickled on the way in), its record and its progress sent back on one queue. The pool is
    this function's own, not concurrent.futures': on Ctrl-C or a failed job every process is
    killed and reaped at once, with no executor shutdown to wait on (whose queue feeder can
    block for ever on a pipe that killed workers no longer read)."""
    if workers <= 1 or len(jobs) <= 1:
        return [build_vocabulary(job, report) for job in jobs]
    context = (multiprocessing.get_context("fork") if hasattr(os, "fork")
               else multiprocessing.get_context("spawn"))
    messages = context.Queue()
    # The cores shared out: each job's splitting and counting threads (analyzer.bpe.threads)
    # on its share, so that `workers` jobs do not run more threads than there are cores.
    threads = os.environ.get(THREADS_ENV) or str(max(1, available_cores() // workers))
    waiting = sorted(range(len(jobs)), key=lambda i: -jobs[i].work)
    running: dict[int, multiprocessing.process.BaseProcess] = {}
    results: dict[int, VocabularyRecord] = {}
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                index = waiting.pop(0)
                process = context.Process(target=_job_process, daemon=True,
                                          args=(jobs[index], index, messages, os.getpid(), threads))
                process.start()
                running[index] = process
            _receive(messages, running, results, jobs, report)
    except BaseException:
        # Ctrl-C or a failed job: stop the other jobs now rather than let them finish.
        for alive in running.values():
            alive.kill()
        for alive in running.values():
            alive.join()
        raise
    return [results[i] for i in range(len(jobs))]


def _receive(messages, running: dict, results: dict, jobs: list[VocabularyJob],
             report: Report | None) -> None:
    """Take the next message (progress, a record, a job's error), or notice a job's process
    that ended without a word (killed, crashed)."""
    try:
        message = messages.get(timeout=0.1)
    except queue.Empty:
        for index, process in list(running.items()):
            if process.is_alive():
                continue
            # Its last messages may still be on their way (its progress, then its record, and
            # other jobs' messages between them): read on until its record comes, or nothing
            # comes for a second, before calling it dead.
            with contextlib.suppress(queue.Empty):
                while index in running:
                    _handle(messages.get(timeout=1.0), running, results, report)
            if index in running:
                running.pop(index).join()
                raise RunError(f"the {jobs[index].label} job's process ended without a result "
                               f"(exit code {process.exitcode}: killed, or out of memory?)") from None
        return
    _handle(message, running, results, report)


def _handle(message: tuple, running: dict, results: dict, report: Report | None) -> None:
    kind = message[0]
    if kind == "progress":
        if report is not None:
            report(*message[1])
    elif kind == "record":
        _, index, record = message
        results[index] = record
        running.pop(index).join()
    else:  # "error": the job raised; its exception, raised here
        _, index, error = message
        running.pop(index).join()
        raise error


def _job_process(job: VocabularyJob, index: int, messages, parent: int, threads: str) -> None:
    """A job's own process: build the vocabulary, send it (or the exception) back."""
    die_with_parent(parent)
    os.environ[THREADS_ENV] = threads
    # Ctrl-C in a terminal reaches the whole process group: the parent stops the jobs itself,
    # so a job does not also print a KeyboardInterrupt traceback of its own. The parent's
    # SIGTERM handler (SIGTERM as an interrupt) is not the job's: SIGTERM ends a job.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        record = build_vocabulary(job, lambda *step: messages.put(("progress", step)))
    except Exception as error:  # noqa: BLE001 - sent to the parent, which raises it
        messages.put(("error", index, error))
    else:
        messages.put(("record", index, record))
    messages.close()
    messages.join_thread()  # everything is in the pipe before this process ends


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


def watch_parent(parent: int) -> None:
    """End this process when `parent` ends, watched by a thread. For a process started from
    a thread that may end before the process does (a server's request thread): the kernel's
    PR_SET_PDEATHSIG fires when the creating thread ends, not the process."""
    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)
