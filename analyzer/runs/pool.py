"""The local pool: a run's jobs in processes of their own, the biggest first.

Jobs report progress through a queue that the parent turns into progress bars. A job's
process dies with its parent: if the command is killed outright (SIGKILL), nothing of it keeps
running.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import sys
import threading
import time

from analyzer.bpe.threads import THREADS_ENV, available_cores
from analyzer.store import VocabularyRecord

from .builders import build_vocabulary
from .errors import RunError
from .plan import Report, VocabularyJob


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
    # What this process holds is shared with each forked job until one writes to it: the
    # collector, walking every object, would have each job copy them all (a third of a
    # gigabyte a job, measured). Frozen, it leaves them alone.
    gc.freeze()
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
    finally:
        gc.unfreeze()
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
    """End this process when `parent`, the process that started it through multiprocessing,
    ends, watched by a thread: its sentinel (a pipe `parent` holds) closes when it ends,
    whoever forked this process (`parent`, or a fork server for it). For a process started
    from a thread that may end before the process does (a server's request thread): the
    kernel's PR_SET_PDEATHSIG fires when the creating thread ends, not the process."""
    started_by = multiprocessing.parent_process()
    if started_by is None or started_by.pid != parent or not started_by.is_alive():
        os._exit(1)  # not the parent it was meant to have, or that one is already gone
    threading.Thread(target=_watch_sentinel, args=(started_by.sentinel,), daemon=True).start()


def _watch_sentinel(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)
