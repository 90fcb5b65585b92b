"""How many threads the compiled code may use for one piece of work: every core this process
may use (`ANALYZER_THREADS=N` sets another number), and one for small inputs, where starting
threads costs more than it saves. The results never depend on it.

>>> default_threads(["short"])
1
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate

THREADS_ENV = "ANALYZER_THREADS"

PARALLEL_CHARACTERS = 1 << 20
"""Texts shorter than this in all (characters) are worked on by one thread."""


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the system has one), or
    `ANALYZER_THREADS`."""
    wanted = os.environ.get(THREADS_ENV, "").strip()
    if wanted.isdigit() and int(wanted) > 0:
        return int(wanted)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_threads(texts: Sequence[str]) -> int:
    """The threads for work on these texts."""
    cores = available_cores()
    if cores > 1 and sum(map(len, texts)) < PARALLEL_CHARACTERS:
        return 1
    return cores


def shares(texts: Sequence[str], n: int) -> list[tuple[int, int]]:
    """The texts cut into n runs of about equal length, as (first, last) index pairs (fewer
    when there are fewer texts); one run, without a look at the texts, for n = 1.

    >>> shares(["aaaa", "b", "c", "dddd"], 2)
    [(0, 2), (2, 4)]
    """
    if n <= 1 or len(texts) <= 1:
        return [(0, len(texts))] if texts else []
    ends = list(accumulate(map((1).__add__, map(len, texts))))  # each text and its separator
    bounds, first = [], 0
    for part in range(n):
        goal = ends[-1] * (part + 1) // n
        last = len(texts) if part == n - 1 else max(first, min(len(texts), bisect_left(ends, goal) + 1))
        if last > first:
            bounds.append((first, last))
        first = last
    return bounds
