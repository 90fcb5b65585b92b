"""Runs started by the service: one at a time per database, each in its own process.

The child process does what `analyzer run` does (`execute_run`) and sends its run id, then its
progress, then how it ended, through a queue. SIGTERM in the child is an interrupt, so
stopping a run marks it interrupted and stores nothing partial, as Ctrl-C does. A child that
dies without saying how it ended (killed, crashed) has its run marked failed; the server keeps
serving.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
from dataclasses import asdict
from pathlib import Path

from analyzer.runs import RunError, RunSettings, resolve_settings
from analyzer.store import RunStatus, StoreError, get_run, mark_run, open_db, running_runs

START_TIMEOUT = 120.0
"""Seconds to wait for a child to record its run (loading a large corpus); a bound, not a pace."""


class RunConflict(StoreError):
    """A run is already in progress on this database."""


class RunStartError(RunError):
    """The child refused the settings before recording a run (the message is the CLI's)."""


def _child(db_path: str, settings: dict, messages) -> None:
    """The run's process: execute_run, reporting through `messages`."""
    from analyzer.runs import execute_run

    def interrupt(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's Ctrl-C stops the child by SIGTERM
    db = open_db(Path(db_path))
    try:
        run_id = execute_run(
            db, RunSettings(**settings),
            report=lambda label, stage, done, total: messages.put(("progress", label, stage, done, total)),
            started=lambda run_id: messages.put(("started", run_id)))
    except KeyboardInterrupt:
        messages.put(("ended", "interrupted", None))
    except (RunError, StoreError, ValueError) as error:
        messages.put(("ended", "refused", str(error)))
    except BaseException as error:  # the run is marked failed by execute_run; say why here too
        messages.put(("ended", "failed", f"{type(error).__name__}: {error}"))
    else:
        messages.put(("ended", "complete", run_id))


class RunManager:
    """The service's runs in progress (at most one per database)."""

    def __init__(self, db_path: Path):
        self.db_path = db_path
        self.context = multiprocessing.get_context("spawn")
        self.lock = threading.Lock()
        self.process: multiprocessing.process.BaseProcess | None = None
        self.run_id: int | None = None
        self.progress: dict[int, dict[str, dict]] = {}
        self.changes = 0
        """How many times a run's progress or state has changed here (for long polls)."""
        self.changed = threading.Condition()

    def start(self, settings: RunSettings) -> int:
        """Start a run; its id once it is recorded. RunError (bad settings), RunConflict (a run
        in progress)."""
        with self.lock:
            db = open_db(self.db_path)
            running = running_runs(db)
            if running or (self.process is not None and self.process.is_alive()):
                which = running[0] if running else self.run_id
                raise RunConflict(f"run {which} is in progress on this database; one run at a "
                                  f"time (DELETE /api/runs/{which} stops it)")
            resolve_settings(db, settings)  # bad settings are refused here, before any process starts
            messages = self.context.Queue()
            process = self.context.Process(target=_child, daemon=True,
                                           args=(str(self.db_path), asdict(settings), messages))
            process.start()
            first = self._first_message(process, messages)
            if first[0] == "ended":
                process.join()
                raise RunStartError(first[2] or "the run ended before it started")
            run_id = first[1]
            self.process, self.run_id = process, run_id
            self.progress[run_id] = {}
            threading.Thread(target=self._follow, args=(process, messages, run_id), daemon=True).start()
            return run_id

    @staticmethod
    def _first_message(process, messages) -> tuple:
        try:
            return messages.get(timeout=START_TIMEOUT)
        except queue.Empty:
            process.terminate()
            return ("ended", "failed", f"the run did not start within {START_TIMEOUT:.0f} s")

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
            db = open_db(self.db_path)
            # (a request may have found it first and marked it interrupted: "killed?")
            if get_run(db, run_id).status != RunStatus.COMPLETE:
                mark_run(db, run_id, RunStatus.FAILED,
                         f"the run's process ended unexpectedly (exit code {process.exitcode})")
        self.progress.pop(run_id, None)
        self._notify()

    def _notify(self) -> None:
        with self.changed:
            self.changes += 1
            self.changed.notify_all()

    def wait_for_change(self, after: int, seconds: float) -> int:
        """Block until more than `after` changes have happened (or `seconds` pass); the count."""
        with self.changed:
            self.changed.wait_for(lambda: self.changes > after, timeout=seconds)
            return self.changes

    def running(self, run_id: int) -> bool:
        return self.run_id == run_id and self.process is not None and self.process.is_alive()

    def stop(self, run_id: int, timeout: float = 60.0) -> bool:
        """Interrupt the run if this service is running it; whether it was."""
        process = self.process
        if not self.running(run_id) or process is None or process.pid is None:
            return False
        os.kill(process.pid, signal.SIGTERM)
        process.join(timeout)
        if process.is_alive():  # it did not stop in time: end it; _follow marks the run
            process.kill()
            process.join()
        return True

    def shutdown(self) -> None:
        if self.run_id is not None:
            self.stop(self.run_id)
