"""Test hooks, for the processes the tests start: never part of analyzer itself.

`RunProcess` (tests/helpers.py) puts this folder on PYTHONPATH, so Python imports this module
at start-up in every process of a test's command: the command, its pool's workers, a run the
service spawns, a Dask worker. Each hook is asked for by an environment variable the test
sets, and stops the process at a known point, so that a test acts on an observed event (a
line on stderr, a process id read from a pipe) instead of after a guessed delay:

- ANALYZER_TEST_STALL=1: every training waits after its first progress report, until the
  process is stopped (a signal lands mid-run, whatever the machine's speed).
- ANALYZER_TEST_STALL_ONCE=PATH: the first training to claim PATH (by creating PATH.claimed)
  writes its process id to PATH, then waits as above; every other training runs through. With
  PATH a named pipe, the test's read of it is the event "a job has begun, in this process".
- ANALYZER_TEST_STALL_AT=NAME: the run stops before `analyzer.runs.execute.NAME` (e.g.
  check_lossless), after saying "analyzer-test: stalled before NAME" on stderr.
- ANALYZER_TEST_PAUSE_AT=NAME:PATH: the run says "analyzer-test: paused before NAME", then
  waits until the test writes a line to the named pipe PATH, then goes on (the test changes
  the world in between: fills the disk, takes a lock, sends a signal). NAME is a function of
  `analyzer.runs.execute`, or MODULE.NAME for another module's (`analyzer.store.save_corpus`).
- ANALYZER_TEST_HOLD_COUNTING=PATH: the service's counting (tokenize, compare) says
  "analyzer-test: counting held" and waits for one byte from the named pipe PATH before it
  counts (the test holds every counting process, then acts while they are busy).
- ANALYZER_TEST_STALL_IMPORT=MODULE: the process says "analyzer-test: stalled importing MODULE"
  on stderr as MODULE (e.g. analyzer.cli) starts to be imported, then waits there until it is
  stopped (a signal lands while the command's modules load, whatever the machine's speed).
- ANALYZER_TEST_TRACE_LOCKS=1: every write transaction says "analyzer-test: BEGIN IMMEDIATE in
  THREAD" on stderr as it asks for the write lock (before it waits for it), THREAD the name of
  the thread asking (a test holding the lock counts the requests waiting for it at once).
"""

from __future__ import annotations

import os
import sys
import threading

_HOOKS = ("ANALYZER_TEST_STALL", "ANALYZER_TEST_STALL_ONCE", "ANALYZER_TEST_STALL_AT",
          "ANALYZER_TEST_PAUSE_AT", "ANALYZER_TEST_HOLD_COUNTING", "ANALYZER_TEST_TRACE_LOCKS",
          "ANALYZER_TEST_STALL_IMPORT")


def _stall_forever() -> None:
    """Block until the process is stopped: an event nobody sets. A signal interrupts the wait
    in the main thread (KeyboardInterrupt, or the run's SIGTERM handler); in another thread (a
    Dask worker's task) it blocks until the process is killed or the task cancelled."""
    threading.Event().wait()


def _claimed() -> bool:
    """Whether this training is the one to stall (see ANALYZER_TEST_STALL_ONCE)."""
    if os.environ.get("ANALYZER_TEST_STALL"):
        return True
    marker = os.environ.get("ANALYZER_TEST_STALL_ONCE")
    if not marker:
        return False
    try:
        os.close(os.open(f"{marker}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    with open(marker, "w") as file:  # a named pipe: blocks until the test reads
        file.write(str(os.getpid()))
    return True


def _stall_trainings() -> None:
    """Wrap the trainer so that a training stalls after its first progress report."""
    import analyzer.bpe

    train = analyzer.bpe.train_by_language

    def stalling(*args, progress=None, **kwargs):
        stall = _claimed()

        def report(done: int, total: int) -> None:
            if progress is not None:
                progress(done, total)
            if stall:
                _stall_forever()
        return train(*args, progress=report, **kwargs)

    analyzer.bpe.train_by_language = stalling


def _stop_before(name: str, pipe: str | None) -> None:
    """Stall (or pause until the pipe says go) before analyzer.runs.execute.NAME, or before
    MODULE.NAME when NAME has dots."""
    import importlib

    where, _, name = name.rpartition(".")
    execute = importlib.import_module(where or "analyzer.runs.execute")
    original = getattr(execute, name)

    def stopped(*args, **kwargs):
        if pipe is None:
            print(f"analyzer-test: stalled before {name}", file=sys.stderr, flush=True)
            _stall_forever()
        print(f"analyzer-test: paused before {name}", file=sys.stderr, flush=True)
        with open(pipe) as go:  # blocks until the test opens the pipe and writes
            go.readline()
        return original(*args, **kwargs)

    setattr(execute, name, stopped)


def _hold_counting(pipe: str) -> None:
    """Make the service's counting wait for a byte from `pipe` (one byte releases one call)."""
    import analyzer.serve.counting as counting

    def held(original):
        def counting(*args, **kwargs):
            os.write(2, b"analyzer-test: counting held\n")  # one write: whole, among threads
            descriptor = os.open(pipe, os.O_RDONLY)  # blocks until the test opens it to write
            try:
                os.read(descriptor, 1)
            finally:
                os.close(descriptor)
            return original(*args, **kwargs)
        return counting

    counting.tokenization = held(counting.tokenization)
    counting.comparison = held(counting.comparison)


def _trace_locks() -> None:
    """Say each BEGIN IMMEDIATE (every write transaction's first statement) and its thread."""
    import sqlite_utils

    execute = sqlite_utils.Database.execute

    def traced(self, sql, *args, **kwargs):
        if isinstance(sql, str) and sql.strip().upper().startswith("BEGIN IMMEDIATE"):
            line = f"analyzer-test: BEGIN IMMEDIATE in {threading.current_thread().name}\n"
            os.write(2, line.encode())  # one write: whole, among threads
        return execute(self, sql, *args, **kwargs)

    sqlite_utils.Database.execute = traced


class _StallImport:
    """A finder that finds nothing: it stalls the import of its module (`find_spec` is asked
    before the module loads)."""

    def __init__(self, module: str):
        self.module = module

    def find_spec(self, name, path=None, target=None):
        if name == self.module:
            os.write(2, f"analyzer-test: stalled importing {name}\n".encode())
            _stall_forever()
        return None


def _install() -> None:
    if os.environ.get("ANALYZER_TEST_STALL") or os.environ.get("ANALYZER_TEST_STALL_ONCE"):
        _stall_trainings()
    if os.environ.get("ANALYZER_TEST_STALL_AT"):
        _stop_before(os.environ["ANALYZER_TEST_STALL_AT"], None)
    if os.environ.get("ANALYZER_TEST_PAUSE_AT"):
        name, _, pipe = os.environ["ANALYZER_TEST_PAUSE_AT"].partition(":")
        _stop_before(name, pipe)
    if os.environ.get("ANALYZER_TEST_HOLD_COUNTING"):
        _hold_counting(os.environ["ANALYZER_TEST_HOLD_COUNTING"])
    if os.environ.get("ANALYZER_TEST_TRACE_LOCKS"):
        _trace_locks()
    if os.environ.get("ANALYZER_TEST_STALL_IMPORT"):
        sys.meta_path.insert(0, _StallImport(os.environ["ANALYZER_TEST_STALL_IMPORT"]))


if any(os.environ.get(hook) for hook in _HOOKS):
    _install()
