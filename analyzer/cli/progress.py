"""A run's progress on a terminal: a bar per vocabulary."""

from __future__ import annotations

import time

from rich.progress import Progress, TaskID

from .formats import byte_size, duration, plain


class VocabularyBars:
    """Progress of a run: one rich bar per vocabulary in a terminal; elsewhere (a log, a
    pipe) one plain line per step, so progress is still visible and can be read by a program:
    `shared: training 120/744`, `shared: counting`, `shared: done`."""

    def __init__(self, bars: Progress, *, plain_lines: bool = False):
        self.bars = bars
        self.plain_lines = plain_lines
        self.tasks: dict[str, TaskID] = {}
        self.last_tenth: dict[str, int] = {}
        self.overall = bars.add_task("vocabularies", total=None)
        self.done = 0
        self.started: dict[str, float] = {}
        """When each source began to be read (for its rate)."""

    def _line(self, text: str) -> None:
        self.bars.console.print(plain(text), soft_wrap=True, highlight=False)

    def stage(self, message: str) -> None:
        self.bars.update(self.overall, description=plain(message))
        if self.plain_lines:
            self._line(message)

    def report(self, scope: str, phase: str, done: int, total: int) -> None:
        if phase == "read":
            self._read(scope, done, total)
            return
        if self.plain_lines:
            if phase == "train":
                tenth = 10 * done // max(total, 1)
                if self.last_tenth.get(scope) != tenth:  # the first report, then every 10 %
                    self.last_tenth[scope] = tenth
                    self._line(f"{scope}: training {done}/{total}")
            else:
                self._line(f"{scope}: {'counting' if phase == 'count' else 'done'}")
            return
        task = self.tasks.get(scope)
        if task is None:
            task = self.tasks[scope] = self.bars.add_task(plain(scope), total=total)
        if phase == "train":
            self.bars.update(task, description=f"{plain(scope)}: training", completed=done,
                             total=total)
        elif phase == "count":
            self.bars.update(task, description=f"{plain(scope)}: counting")
        else:
            self.bars.remove_task(task)
            if scope in self.started:  # a source read, not a vocabulary
                return
            self.done += 1
            self.bars.update(self.overall, description=f"vocabularies done: {self.done}")

    def _read(self, scope: str, done: int, total: int) -> None:
        """Reading a training source: the bytes read of the total, the rate and the time left."""
        now = time.monotonic()
        started = self.started.setdefault(scope, now)
        rate = done / max(now - started, 1e-9)
        left = (total - done) / rate if rate > 0 and done else None
        said = (f"{scope}: read {byte_size(done)} of {byte_size(total)}"
                + (f", {byte_size(rate)}/s, {duration(left)} left" if left is not None else ""))
        if self.plain_lines:
            tenth = 10 * done // max(total, 1)
            if self.last_tenth.get(scope) != tenth:
                self.last_tenth[scope] = tenth
                self._line(said)
            return
        task = self.tasks.get(scope)
        if task is None:
            task = self.tasks[scope] = self.bars.add_task(plain(scope), total=total)
        self.bars.update(task, description=plain(said), completed=done, total=total)
