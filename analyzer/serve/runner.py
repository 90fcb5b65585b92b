"""Runs started by the service: one at a time per database, each in its own process, the
others waiting in the database's queue (`analyzer.store.queue`) in the order they were asked.

A run asked for when none is in progress or waiting starts at once (its id is the answer);
otherwise it is queued (its place is the answer). When a run ends, the dispatcher thread starts
the next; it also looks every few seconds, for a run started elsewhere (`analyzer run`) that
ends, and on start-up, so a restarted server resumes its queue.

The child process does what `analyzer run` does (`execute_run`) and sends its run id, then its
progress, then how it ended, through a queue. SIGTERM in the child is an interrupt, so
stopping a run marks it interrupted and stores nothing partial, as Ctrl-C does. A child that
dies without saying how it ended (killed, crashed) has its run marked failed; the server keeps
serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from analyzer.errors import AnalyzerError, Busy
from analyzer.interrupts import keep_interrupts
from analyzer.limits import DEFAULT_MAX_QUEUE
from analyzer.runs import RunError, RunSettings, resolve_settings
from analyzer.runs.resolution import pin_of
from analyzer.store import (
    AnalyzerDatabase,
    QueuedRunRead,
    QueueStatus,
    RunStatus,
    WaitBudget,
    cancel_queued,
    claim_next,
    default_lock_wait,
    enqueue_run,
    finish_queued,
    get_run,
    mark_run,
    open_db,
    queued_runs,
    reap_stale_runs,
    reconnect,
    requeue_starting,
    return_to_waiting,
    running_runs,
    write_transaction,
)

from .problems import ServerBusy
from .progress import RunProgress, planned_jobs
from .state import served_lock_wait, without_paths

START_TIMEOUT = 120.0
"""Seconds to wait for a child to record its run (loading a large corpus); a bound, not a pace."""


LOOK_AGAIN = 2.0
"""Seconds between the dispatcher's looks while runs wait (a run elsewhere may have ended)."""

STOP_GRACE = 60.0
"""Seconds an interrupted run's process has to end, beyond what it may wait for another
process's lock to mark its run interrupted; then it is killed (and its run marked failed)."""


class QueueFull(ServerBusy):
    """As many runs wait as the server queues: try again once one has started."""

    retry_after = 60


class RunStartError(RunError):
    """The child refused the settings before recording a run (the message is the CLI's)."""


def _child(db_path: str, settings: dict, messages, server: int, pinned: str | None = None,
           json_log: bool = False, record_wait: float | None = None) -> None:
    """The run's process: execute_run (on what a queued run was asked on, `pinned`),
    reporting through `messages` (and, `json_log`, writing its stderr as the server's JSON
    log). It is not daemonic (a daemonic process may not start the run's own pool of workers),
    so it watches the server instead and ends if the server does; the server interrupts it
    when it stops. `record_wait`: the seconds left of its request's wait budget, all it waits
    for another process's lock before its run is recorded (then refused, DatabaseBusy, with
    nothing recorded); once recorded, its writes wait as the command line's do."""
    from analyzer.runs import execute_run
    from analyzer.runs.pool import watch_parent

    if json_log:
        from .logs import use_json_stderr

        use_json_stderr()
    watch_parent(server)

    def interrupt(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    keep_interrupts()  # one that lands in a finalizer (logging's lock, say) comes again
    # The server's Ctrl-C (which a terminal sends to every process of the group) stops the
    # child by SIGTERM. SIGINT was blocked from the child's start (`_launch`), so one that came
    # while Python started is dropped here, not a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        db = open_db(Path(db_path), create=False)  # deleted since: said, never made anew
        patience = db.lock_wait
        if record_wait is not None:
            db.wait_for_locks(served_lock_wait(record_wait, WaitBudget(record_wait)))

        def started(run_id: int) -> None:
            db.wait_for_locks(patience)  # recorded: its results wait as a run's always do
            messages.put(("started", run_id))

        run_id = execute_run(
            db, RunSettings(**settings),
            report=lambda label, stage, done, total: messages.put(("progress", label, stage, done, total)),
            started=started, pinned=pinned)
    except KeyboardInterrupt:
        messages.put(("ended", "interrupted", None))
    except AnalyzerError as error:  # refused before the run was recorded (or after: marked)
        messages.put(("ended", "refused", error))
    except BaseException as error:  # the run is marked failed by execute_run; say why here too
        messages.put(("ended", "failed", f"{type(error).__name__}: {error}"))
    else:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # complete: a late interrupt stops nothing
        _said_complete(messages, run_id)


def _said_complete(messages, run_id: int) -> None:
    """The child's last word when its run is complete (a step of its own, where a test may
    hold the process between its run's completion and its end)."""
    messages.put(("ended", "complete", run_id))


class Claim:
    """The right to start the next run, asked for inside a write transaction: `claim(busy)`
    takes it unless `busy` (a run in progress or waiting), another is starting, or the server
    is closing; whether it did (`won`). The manager's lock is held for an instant, never while
    the database is waited for."""

    def __init__(self, manager: RunManager):
        self.manager, self.won = manager, False

    def __call__(self, busy) -> bool:
        manager = self.manager
        with manager.lock:
            if busy or manager.starting or manager.closing:
                return False
            manager.starting = self.won = True
        return True


FORK_SERVER = "ANALYZER_FORK_SERVER"
"""Set in the environment the fork server starts with, to say that it is one (`fork_server`)."""

RUN_MODULES = ["analyzer.serve.fork_server", "huggingface_hub.file_download"]
"""What a run's process imports before it records its run: this module, whose `_child` it runs
(with the service it belongs to, and `analyzer.runs`; `fork_server` loads it), and what
checking its settings loads (a catalog tokenizer's files looked for in the Hugging Face
cache); loaded once, in the fork server (one that is not installed is left out)."""


def run_processes() -> Any:
    """How a run's process starts: forked from a fork server that has the run's modules
    loaded, where the platform has one (a process spawned anew spent seconds importing them
    while its client waited for the run to start); spawned otherwise. Either way the process
    starts from a Python of its own, never from the server (its threads and event loop stay
    behind). The fork server is started here, to load them while the server waits for its
    first run; the processes it forks start with SIGINT ignored (`fork_server`)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(RUN_MODULES)
    os.environ[FORK_SERVER] = "1"  # what the fork server starts with (the server starts it
    try:  # before it serves: no other thread reads the environment meanwhile)
        forkserver.ensure_running()
    except OSError:  # its socket cannot be made (a temporary folder whose path is too long
        return multiprocessing.get_context("spawn")  # for one): runs are spawned, as before
    finally:
        os.environ.pop(FORK_SERVER, None)
    return context


class RunManager:
    """The service's runs: at most one in progress per database, the others queued.

    Whether a run is in progress is what the database says (the run's row is `running`), as
    GET /api/runs/{id} reports it, plus the moment between a run's process starting and its
    run being recorded (`starting`): a run that GET shows complete never holds back the next.
    `submit` starts a run or queues it; the dispatcher thread (`resume`) starts the queued
    ones in order; `stop` interrupts a run, `cancel` takes a waiting one out of the queue."""

    def __init__(self, db: AnalyzerDatabase, max_queue: int = DEFAULT_MAX_QUEUE,
                 json_log: bool = False):
        self.checked = db
        """The served database, as checked at start: each use opens it again (`reconnect`),
        refusing a file deleted or replaced since."""
        self.db_path = db.path
        self.context = run_processes()
        self.lock = threading.Lock()
        self.starting = False
        self.processes: dict[int, multiprocessing.process.BaseProcess] = {}
        """The process of each run this service started that has not ended."""
        self.stopping: dict[int, float] = {}
        """The runs interrupted (`stop`) whose process has not ended: when it is killed."""
        self.progress: dict[int, RunProgress] = {}
        """The progress of each run this service is running, as its process reports it."""
        self.changes = 0
        """How many times a run's progress or state has changed here (for long polls)."""
        self.changed = threading.Lock()
        self.waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        """The long polls waiting for a change: an event each, set from `_follow`'s thread."""
        self.closing = False
        """The server is stopping: long polls answer at once (`stop_waiting`), the queue
        starts nothing more."""
        self.max_queue = max_queue
        self.wake = threading.Event()
        """Set when the dispatcher should look at the queue now (a run ended, one was queued)."""
        self.dispatcher: threading.Thread | None = None
        self.json_log = json_log
        """The server's log is JSON: a run's process writes its stderr so too."""

    def submit(self, settings: RunSettings, budget: WaitBudget | None = None) -> dict:
        """Start a run now, or queue it: `{"run": id, "status": "running"}`, or the queued
        entry's document (`status` waiting, `position`). Bad settings are refused (RunError)
        before anything is stored; a full queue is QueueFull. Every wait for another process's
        lock (here, and the run's process recording its run) comes out of `budget` (the
        request's); the manager's own lock is never held while the database is waited for."""
        lock_wait = served_lock_wait(self.checked.lock_wait.seconds, budget)
        with contextlib.closing(reconnect(self.checked, lock_wait=lock_wait)) as db:
            resolved = resolve_settings(db, settings)  # bad settings are refused now
            jobs = planned_jobs(resolved)  # what its watchers count its progress against
            with self._claiming() as claim, write_transaction(db):  # another's lock: waited here
                reap_stale_runs(db)  # a run whose process is gone is not in progress
                waiting = queued_runs(db)
                if not claim(running_runs(db) or waiting):
                    if len(waiting) >= self.max_queue:
                        raise QueueFull(f"{len(waiting)} runs are waiting, as many as this "
                                        f"server queues (analyzer serve --max-queue); try again "
                                        "once one has started")
                    entry = enqueue_run(db, asdict(settings), resolved.corpus.name,
                                        pin_of(resolved))
            if not claim.won:
                self._notify()
                self.wake.set()
                return self.queued_document(entry)
        try:
            # The run's process records the run waiting only what is left of the budget: never
            # recorded after its client was told it failed.
            run_id = self._launch(settings, record_wait=budget.left() if budget else None,
                                  jobs=jobs)
        finally:
            self._started()
        return {"run": run_id, "status": RunStatus.RUNNING.value, "url": f"/api/runs/{run_id}"}

    @contextlib.contextmanager
    def _claiming(self) -> Iterator[Claim]:
        """Inside a write transaction: the right to start the next run (`Claim`), given back
        if the transaction then fails."""
        claim = Claim(self)
        try:
            yield claim
        except BaseException:
            if claim.won:
                self._started()
            raise

    def _started(self) -> None:
        """The run being started has its process (or was refused): the next may start."""
        with self.lock:
            self.starting = False
        self.wake.set()  # the next in the queue, once this one ends or was refused

    @staticmethod
    def queued_document(entry: QueuedRunRead) -> dict:
        return {**entry.model_dump(mode="json"), "url": f"/api/queue/{entry.id}"}

    def cancel(self, queued_id: int, budget: WaitBudget | None = None) -> QueuedRunRead:
        """Take a waiting run out of the queue (QueueStateError if it is not waiting)."""
        lock_wait = served_lock_wait(self.checked.lock_wait.seconds, budget)
        with contextlib.closing(reconnect(self.checked, lock_wait=lock_wait)) as db:
            entry = cancel_queued(db, queued_id)
        self._notify()
        return entry

    def _launch(self, settings: RunSettings, pinned: str | None = None,
                record_wait: float | None = None, jobs: int | None = None) -> int:
        """The run's process, started (pinned to what it was asked on, `pinned`, if given; its
        run recorded within `record_wait` s of another process's lock, if given); its run id
        once it has recorded the run. Its refusal (RunError, or the error the process raised)
        if it ends first. `jobs`: how many it reports progress for (`planned_jobs`), so that
        its watchers see the share of the whole run done."""
        began = time.monotonic()  # its elapsed time counts its start, which its client waits
        messages = self.context.Queue()
        process = self.context.Process(target=_child, args=(
            str(self.db_path), asdict(settings), messages, os.getpid(), pinned, self.json_log,
            record_wait))
        # Spawned (where there is no fork server), it starts with SIGINT blocked (a mask is
        # inherited through fork and exec; only this thread's is changed): a Ctrl-C while the
        # child imports would otherwise print a KeyboardInterrupt traceback from the middle of
        # its start-up. `_child` unblocks it. Forked from the fork server, it starts with
        # SIGINT ignored (`fork_server`).
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        first = self._first_message(process, messages)
        if first[0] == "ended":
            process.join()
            if isinstance(first[2], AnalyzerError):
                raise first[2]  # as the run's process raised it (its kind, its fields)
            raise RunStartError(first[2] or "the run ended before it started")
        run_id = first[1]
        self.processes[run_id] = process
        self.progress[run_id] = RunProgress(jobs, began)
        self._notify()
        threading.Thread(target=self._follow, args=(process, messages, run_id), daemon=True).start()
        return run_id

    def resume(self) -> None:
        """Start the dispatcher: entries a stopped server left starting wait again, at their
        place, and the queue goes on. (On its thread: a lock held by another process while
        the server starts keeps no request waiting.)"""
        self.dispatcher = threading.Thread(target=self._dispatch, name="analyzer-queue", daemon=True)
        self.dispatcher.start()

    def _dispatch(self) -> None:
        """Start the next queued run whenever none is in progress, until the server stops."""
        with contextlib.suppress(AnalyzerError), contextlib.closing(reconnect(self.checked)) as db:
            requeue_starting(db)
        while not self.closing:
            self.wake.wait(LOOK_AGAIN)
            self.wake.clear()
            if self.closing:
                return
            try:
                self._start_next()
            except AnalyzerError:  # the database busy or gone: the next look tries again
                continue

    def _start_next(self) -> None:
        with contextlib.closing(reconnect(self.checked)) as db:
            if self.starting or self.closing or not queued_runs(db):
                return  # nothing waits (a read: an idle server writes nothing)
            with self._claiming() as claim, write_transaction(db):
                reap_stale_runs(db)
                # Another process's run (analyzer run) in progress: wait for its end.
                claimed = claim_next(db) if claim(running_runs(db)) else None
            if claimed is None:
                if claim.won:
                    self._started()
                return
        queued_id = claimed.id
        try:
            # Pinned: a corpus replaced while the run waited refuses it (the child checks, just
            # before it records the run; once recorded, the corpus cannot be replaced).
            settings = RunSettings(**claimed.settings)
            run_id = self._launch(settings, claimed.pin, jobs=self._planned(settings))
        except Busy:  # the database locked, or gone, before its run was recorded: not refused
            with contextlib.suppress(AnalyzerError), \
                    contextlib.closing(reconnect(self.checked)) as db:
                return_to_waiting(db, queued_id)  # tried again at the next look
        except AnalyzerError as error:  # said as a client may see it: no server path
            self._finish(queued_id, QueueStatus.REFUSED,
                         error=without_paths(error, self.db_path).render())
        except Exception as error:  # settings stored by an older version, say: refused, said
            self._finish(queued_id, QueueStatus.REFUSED, error=f"{type(error).__name__}: {error}")
        else:
            self._finish(queued_id, QueueStatus.STARTED, run_id=run_id)
        finally:
            self._started()

    def _planned(self, settings: RunSettings) -> int | None:
        """How many jobs a queued run will report (`planned_jobs`), its settings resolved as
        its process will; None if they cannot be (its process then says why)."""
        try:
            with contextlib.closing(reconnect(self.checked)) as db:
                return planned_jobs(resolve_settings(db, settings))
        except Exception:  # refused, or the database busy: the run's own start says so
            return None

    def _finish(self, queued_id: int, status: QueueStatus, **how) -> None:
        with contextlib.closing(reconnect(self.checked)) as db:
            finish_queued(db, queued_id, status, **how)
        self._notify()

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
        """Keep the run's progress; when its process ends without saying so, mark it failed.
        A process interrupted that has not ended by its deadline (`stop`) is killed."""
        ended = False
        while True:
            try:
                message = messages.get(timeout=0.5)
            except queue.Empty:
                if not process.is_alive():
                    break
                if self.stopping.get(run_id, math.inf) < time.monotonic():
                    process.kill()  # deaf to SIGTERM: the run is marked failed below
                continue
            if message[0] == "progress":
                _, label, stage, done, total = message
                self.progress[run_id].step(label, stage, done, total, time.monotonic())
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
        self.stopping.pop(run_id, None)
        self._notify()
        self.wake.set()  # the next queued run may start

    def _notify(self) -> None:
        with self.changed:
            self.changes += 1
            for loop, event in self.waiters:
                loop.call_soon_threadsafe(event.set)

    async def wait_for_change(self, after: int | None, seconds: float) -> int:
        """Wait until more than `after` changes have happened (or `seconds` pass); the count.
        Without `after` or `seconds`, the count now; and now too for an `after` above the
        count, which is from before this server started (a client that watched the one
        before): its view is stale, whatever happens next. A coroutine on the event loop: a
        waiting client holds no thread."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self.changed:
            if after is None or not seconds or self.changes != after or self.closing:
                return self.changes
            self.waiters.add(waiter)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter[1].wait(), seconds)
        finally:
            with self.changed:
                self.waiters.discard(waiter)
        return self.changes

    async def wait_for_end(self, run_id: int, seconds: float) -> bool:
        """Wait until the run's process has ended and its end is recorded (`_follow`), or
        `seconds` pass; whether it has. On the event loop, holding no thread."""
        deadline = time.monotonic() + seconds
        while True:
            seen = self.changes
            if run_id not in self.processes:
                return True
            left = deadline - time.monotonic()
            if left <= 0 or self.closing:
                return False
            await self.wait_for_change(seen, left)

    def stop_waiting(self) -> None:
        """Answer every long poll now, and any later one at once: the server is stopping, and
        would otherwise wait for them."""
        with self.changed:
            self.closing = True
            for loop, event in self.waiters:
                loop.call_soon_threadsafe(event.set)

    def stop(self, run_id: int) -> bool:
        """Interrupt the run if this service is running it (SIGTERM: the run marks itself
        interrupted, as on Ctrl-C); whether it was. It is not waited for here (`wait_for_end`);
        a process still alive `STOP_GRACE` s after its run's own lock patience is killed."""
        process = self.processes.get(run_id)
        if process is None or not process.is_alive() or process.pid is None:
            return False
        if run_id not in self.stopping:
            self.stopping[run_id] = (time.monotonic() + default_lock_wait().seconds
                                     + STOP_GRACE)
            os.kill(process.pid, signal.SIGTERM)
        return True

    def shutdown(self) -> None:
        """Stop: the queue starts nothing more (what waits, waits for the next server), and a
        run in progress is interrupted (and waited for, `STOP_GRACE` s at most)."""
        with self.lock:
            self.closing = True
        self.wake.set()
        for run_id, process in list(self.processes.items()):
            self.stop(run_id)
            process.join(STOP_GRACE)
            if process.is_alive():
                process.kill()
                process.join()
