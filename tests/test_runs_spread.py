"""Local builders' tasks shared out (`analyzer.runs.spread`): results in order, progress on
the caller's thread, a failure raised; production tokenizers measured side by side give the
records they give one after another."""

from __future__ import annotations

import threading

import pytest

from analyzer.runs import RunSettings, execute_run
from analyzer.runs.spread import ThreadSpread
from analyzer.store import load_counts, load_split_words, load_vocabulary_scripts, vocabularies


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_thread_spread_gives_results_in_order_and_reports_here(workers):
    caller = threading.get_ident()
    seen = []
    both = threading.Barrier(2, timeout=10) if workers > 1 else None

    def square(n, report):
        report(f"item {n}", "count", 0, 1)
        if both is not None and n < 2:  # the first two run at once, or this waits forever
            both.wait()
        return n * n

    found = ThreadSpread(workers).map(square, [0, 1, 2, 3], list("abcd"),
                                      lambda *event: seen.append((threading.get_ident(), event)))
    assert found == [0, 1, 4, 9]
    assert sorted(event for _, event in seen) == [(f"item {n}", "count", 0, 1) for n in range(4)]
    assert {thread for thread, _ in seen} == {caller}


def test_a_failed_task_is_raised_after_the_others_end():
    ended = []

    def task(n, report):
        if n == 1:
            raise ValueError("item 1 is bad")
        ended.append(n)
        return n

    with pytest.raises(ValueError, match="item 1 is bad"):
        ThreadSpread(2).map(task, [0, 1, 2], list("abc"))
    assert sorted(ended) == [0, 2]


def test_tokenizers_measured_side_by_side_equal_one_after_another(tiny_db, catalog_store):
    settings = dict(sizes=[], tokenizers=["cl100k_base", "o200k_base", "gpt2"])
    alone = execute_run(tiny_db, RunSettings(**settings, jobs=1))
    spread = execute_run(tiny_db, RunSettings(**settings, jobs=3))
    assert load_counts(tiny_db, spread) == load_counts(tiny_db, alone)

    def described(run_id):
        return ([(v.scope, v.engine, v.library) for v in vocabularies(tiny_db, run_id)],
                load_split_words(tiny_db, run_id), load_vocabulary_scripts(tiny_db, run_id))

    assert described(spread) == described(alone)
