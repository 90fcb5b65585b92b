"""Work that is not a training job, spread over the cores a run has: a production tokenizer's
measurement, one task per tokenizer.

A `Spread` maps a function over items and gives the results in the items' order, as `map`
does. `ThreadSpread` runs them on this process's threads: what a task spends its time in (the
analyzer's engine, tiktoken, Hugging Face's tokenizers, SentencePiece) lets go of the GIL, and
the tokenizers loaded for the run's checks are used as they are, not loaded again in another
process. Its tasks' progress is reported on the calling thread, where a command's progress bars
and the service's run records live. The Dask executor (`cluster.DaskExecutor.spread`) is the
other; its tasks must pickle.

    >>> ThreadSpread(2).map(lambda n, report: n * n, [1, 2, 3], ["a", "b", "c"])
    [1, 4, 9]
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from .plan import Report

T = TypeVar("T")
R = TypeVar("R")


class Spread(Protocol):
    in_process: bool
    """Its tasks run in this process (they may take its objects as they are, not pickled)."""

    def map(self, function: Callable[[Any, Report], R], items: Sequence[Any],
            labels: Sequence[str], report: Report | None = None) -> list[R]:
        """`function(item, report)` for every item, results in order; `labels` name the items
        in errors and progress."""
        ...


_DONE = object()


class ThreadSpread:
    """Up to `workers` tasks at once on this process's threads (one: in order, here)."""

    in_process = True

    def __init__(self, workers: int):
        self.workers = max(1, workers)

    def map(self, function: Callable[[Any, Report], R], items: Sequence[Any],
            labels: Sequence[str], report: Report | None = None) -> list[R]:
        report = report or (lambda *args: None)
        if self.workers == 1 or len(items) <= 1:
            return [function(item, report) for item in items]
        # The tasks' progress comes back on a queue and is reported here, on the caller's
        # thread; each task ends with _DONE, so the wait below lands on the last one's end.
        events: queue.SimpleQueue = queue.SimpleQueue()

        def task(item):
            try:
                return function(item, lambda *args: events.put(args))
            finally:
                events.put(_DONE)

        pool = ThreadPoolExecutor(min(self.workers, len(items)), thread_name_prefix="spread")
        try:
            futures = [pool.submit(task, item) for item in items]
            left = len(futures)
            while left:
                event = events.get()
                if event is _DONE:
                    left -= 1
                else:
                    report(*event)
            return [future.result() for future in futures]
        finally:
            # Ctrl-C or a failed task: the tasks not started are dropped; those running end
            # with their current call (a thread cannot be stopped from outside).
            pool.shutdown(wait=True, cancel_futures=True)
