"""Runs started by the service: one at a time per database, each in its own process.

The child process does what `analyzer run` does (`execute_run`) and sends its run id, then its
progress, then how it ended, through a queue. SIGTERM in the child is an interrupt, so
stopping a run marks it interrupted and stores nothing partial, as Ctrl-C does. A child that
dies without saying how it ended (killed, crashed) has its run marked failed; the server keeps
serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import queue
import signal
import threading
import time
from dataclasses import asdict
from pathlib import Path

from analyzer.errors import AnalyzerError, Conflict
from analyzer.runs import RunError, RunSettings, resolve_settings
from analyzer.store import (
    AnalyzerDatabase,
    RunStatus,
    get_run,
    mark_run,
    open_db,
    reap_stale_runs,
    reconnect,
    running_runs,
)

START_TIMEOUT = 120.0
"""Seconds to wait for a child to record its run (loading a large corpus); a bound, not a pace."""


class RunConflict(Conflict):
    """A run is already in progress on this database."""


class RunStartError(RunError):
    """The child refused the settings before recording a run (the message is the CLI's)."""


def _child(db_path: str, settings: dict, messages, server: int) -> None:
    """The run's process: execute_run, reporting through `messages`. It is not daemonic (a
    daemonic process may not start the run's own pool of workers), so it watches the server
    instead and ends if the server does; the server interrupts it when it stops."""
    from analyzer.runs import execute_run
    from analyzer.runs.pool import watch_parent

    watch_parent(server)

    def interrupt(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's Ctrl-C stops the child by SIGTERM
    try:
        db = open_db(Path(db_path), create=False)  # deleted since: said, never made anew
        run_id = execute_run(
            db, RunSettings(**settings),
            report=lambda label, stage, done, total: messages.put(("progress", label, stage, done, total)),
            started=lambda run_id: messages.put(("started", run_id)))
    except KeyboardInterrupt:
        messages.put(("ended", "interrupted", None))
    except AnalyzerError as error:  # refused before the run was recorded (or after: marked)
        messages.put(("ended", "refused", error))
    except BaseException as error:  # the run is marked failed by execute_run; say why here too
        messages.put(("ended", "failed", f"{type(error).__name__}: {error}"))
    else:
        messages.put(("ended", "complete", run_id))


class RunManager:
    """The service's runs (at most one in progress per database).

    Whether a run is in progress is what the database says (the run's row is `running`), as
    GET /api/runs/{id} reports it, plus the moment between a run's process starting and its
    run being recorded (`starting`): a run that GET shows complete never blocks the next."""

    def __init__(self, db: AnalyzerDatabase):
        self.checked = db
        """The served database, as checked at start: each use opens it again (`reconnect`),
        refusing a file deleted or replaced since."""
        self.db_path = db.path
        self.context = multiprocessing.get_context("spawn")
        self.lock = threading.Lock()
        self.starting = False
        self.processes: dict[int, multiprocessing.process.BaseProcess] = {}
        """The process of each run this service started that has not ended."""
        self.progress: dict[int, dict[str, dict]] = {}
        self.changes = 0
        """How many times a run's progress or state has changed here (for long polls)."""
        self.changed = threading.Lock()
        self.waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        """The long polls waiting for a change: an event each, set from `_follow`'s thread."""
        self.closing = False
        """The server is stopping: long polls answer at once (`stop_waiting`)."""

    def start(self, settings: RunSettings) -> int:
        """Start a run; its id once it is recorded. RunError (bad settings), RunConflict (a run
        in progress, or one starting)."""
        with self.lock:
            if self.starting:
                raise RunConflict("a run is starting on this database; one run at a time "
                                  "(GET /api/runs shows it once it is recorded)")
            with contextlib.closing(reconnect(self.checked)) as db:
                reap_stale_runs(db)  # a run whose process is gone is not in progress
                running = running_runs(db)
                if running:
                    raise RunConflict(f"run {running[0]} is in progress on this database; one "
                                      f"run at a time (DELETE /api/runs/{running[0]} stops it)")
                resolve_settings(db, settings)  # bad settings are refused before any process
            self.starting = True
        try:
            messages = self.context.Queue()
            process = self.context.Process(target=_child, args=(
                str(self.db_path), asdict(settings), messages, os.getpid()))
            process.start()
            first = self._first_message(process, messages)
            if first[0] == "ended":
                process.join()
                if isinstance(first[2], AnalyzerError):
                    raise first[2]  # as the run's process raised it (its kind, its fields)
                raise RunStartError(first[2] or "the run ended before it started")
            run_id = first[1]
            self.processes[run_id] = process
            self.progress[run_id] = {}
            threading.Thread(target=self._follow, args=(process, messages, run_id), daemon=True).start()
            return run_id
        finally:
            with self.lock:
                self.starting = False

    @staticmethod
    def _first_message(process, messages) -> tuple:
        """The child's first word: its run recorded, or how it ended before (refused settings,
        a pattern that loses text or runs away: bounded, so said within seconds), or that it
        died saying nothing."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                return messages.get(timeout=0.2)
            except queue.Empty:
                if not process.is_alive():
                    return ("ended", "failed", "the run's process ended before recording the "
                            f"run (exit code {process.exitcode}); nothing was stored")
        process.terminate()
        process.join()
        return ("ended", "failed", f"the run's process did not record the run within "
                f"{START_TIMEOUT:.0f} s (it was loading the corpus and checking the "
                "pre-tokenizers on it); it was stopped and nothing was stored")

    def _follow(self, process, messages, run_id: int) -> None:
        """Keep the run's progress; when its process ends without saying so, mark it failed."""
        ended = False
        while True:
            try:
                message = messages.get(timeout=0.5)
            except queue.Empty:
                if not process.is_alive():
                    break
                continue
            if message[0] == "progress":
                _, label, stage, done, total = message
                self.progress[run_id][label] = {"stage": stage, "done": done, "total": total}
                self._notify()
            elif message[0] == "ended":
                ended = True
                break
        process.join()
        if not ended:
            with contextlib.suppress(AnalyzerError), contextlib.closing(reconnect(self.checked)) as db:
                if get_run(db, run_id).status != RunStatus.COMPLETE:
                    mark_run(db, run_id, RunStatus.FAILED, "the run's process ended "
                             f"unexpectedly (exit code {process.exitcode})")
        self.processes.pop(run_id, None)
        self.progress.pop(run_id, None)
        self._notify()

    def _notify(self) -> None:
        with self.changed:
            self.changes += 1
            for loop, event in self.waiters:
                loop.call_soon_threadsafe(event.set)

    async def wait_for_change(self, after: int, seconds: float) -> int:
        """Wait until more than `after` changes have happened (or `seconds` pass); the count.
        A coroutine on the event loop: a waiting client holds no thread."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self.changed:
            if self.changes > after or self.closing:
                return self.changes
            self.waiters.add(waiter)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter[1].wait(), seconds)
        finally:
            with self.changed:
                self.waiters.discard(waiter)
        return self.changes

    def stop_waiting(self) -> None:
        """Answer every long poll now, and any later one at once: the server is stopping, and
        would otherwise wait for them."""
        with self.changed:
            self.closing = True
            for loop, event in self.waiters:
                loop.call_soon_threadsafe(event.set)

    def stop(self, run_id: int, timeout: float = 60.0) -> bool:
        """Interrupt the run if this service is running it; whether it was."""
        process = self.processes.get(run_id)
        if process is None or not process.is_alive() or process.pid is None:
            return False
        os.kill(process.pid, signal.SIGTERM)
        process.join(timeout)
        if process.is_alive():  # it did not stop in time: end it; _follow marks the run
            process.kill()
            process.join()
        return True

    def shutdown(self) -> None:
        for run_id in list(self.processes):
            self.stop(run_id)
