"""A run's progress: a bar per vocabulary in a terminal, a few plain lines elsewhere."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..runs.plan import STEPS
from ..settings import byte_size
from .formats import plain

PLAIN_EVERY = 5.0
"""Seconds between two plain lines of one vocabulary's (or source's) progress: a log of a
minute's run is a few lines, however many merges it learns."""



class MergesColumn(ProgressColumn):
    """`120/744` for a bar of merges (or rounds); nothing for others (a source's bar says its bytes in
    its description)."""

    def render(self, task: Task) -> Text:
        if not task.fields.get("merges") or task.total is None:
            return Text("")
        return Text(f"{int(task.completed):,}/{int(task.total):,}")


class DescriptionColumn(TextColumn):
    """A bar's description, its markup read (what `plain` escaped stays as written), and no
    `:name:` in it read as an emoji's code (a vocabulary, source or file may be so named)."""

    def render(self, task: Task) -> Text:
        return Text.from_markup(self.text_format.format(task=task), emoji=False)


def progress_bars(console, *, disable: bool = False) -> Progress:
    """The bars a terminal shows: what is happening, the bar, merges done of all, the time
    left (said once: no description says it)."""
    return Progress(DescriptionColumn("{task.description}"), BarColumn(), MergesColumn(),
                    TimeRemainingColumn(), console=console, transient=True, disable=disable)


class VocabularyBars:
    """Progress of a run: one rich bar per vocabulary in a terminal; elsewhere (a log, a
    pipe) plain lines, so a log stays short and a program can still follow it: one when a
    vocabulary starts (`shared: training, 744 merges`), then at most one every `PLAIN_EVERY`
    seconds (`shared: 120 of 744 merges`), and `shared: done` if it took that long.

    `clock` is the time in seconds (tests give their own, so no test waits on real time)."""

    def __init__(self, bars: Progress, *, plain_lines: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.bars = bars
        self.plain_lines = plain_lines
        self.gone = False
        """Whether the progress's reader has closed its end: a run is never failed by it."""
        self.clock = clock
        self.tasks: dict[str, TaskID] = {}
        self.said: dict[str, float] = {}
        """When each vocabulary's (or source's) last plain line was printed."""
        self.overall = bars.add_task("vocabularies", total=None)
        self.done = 0
        self.started: dict[str, float] = {}
        """When each source began to be read (for its rate)."""

    def _line(self, text: str) -> None:
        if self.gone:
            return
        try:
            self.bars.console.print(plain(text), soft_wrap=True, highlight=False)
        except OSError:  # its reader has gone (`2>&1 | head`): the run goes on, unseen
            self.gone = True

    def _due(self, scope: str) -> bool | None:
        """Whether a plain line of `scope`'s progress is due: None for its first (it starts),
        then True once `PLAIN_EVERY` seconds have passed since its last line."""
        now = self.clock()
        last = self.said.get(scope)
        if last is not None and now - last < PLAIN_EVERY:
            return False
        self.said[scope] = now
        return None if last is None else True

    def stage(self, message: str) -> None:
        self.bars.update(self.overall, description=plain(message))
        if self.plain_lines:
            self._line(message)

    def report(self, scope: str, phase: str, done: int, total: int) -> None:
        if phase == "read":
            self._read(scope, done, total)
            return
        steps = STEPS.get(phase)  # what a training counts: BPE's merges, Unigram's rounds
        if self.plain_lines:
            due = self._due(scope)
            if due is None:  # its first line: what it starts
                self._line((f"{scope}: training, {total:,} {steps}" if total > 1 else
                            f"{scope}: training") if steps
                           else f"{scope}: counting" if phase == "count" else f"{scope}: done")
            elif due and steps and total > 1:
                self._line(f"{scope}: {done:,} of {total:,} {steps}")
            elif due:
                self._line(f"{scope}: {'counting' if phase == 'count' else 'done'}")
            return
        task = self.tasks.get(scope)
        if task is None:
            task = self.tasks[scope] = self.bars.add_task(plain(scope), total=total)
        if steps and total > 1:
            self.bars.update(task, description=f"{plain(scope)}: {steps}", completed=done,
                             total=total, merges=True)
        elif steps:  # a training that counts no steps (yet): no "merges 0/1"
            self.bars.update(task, description=f"{plain(scope)}: training", completed=done,
                             total=total, merges=False)
        elif phase == "count":
            self.bars.update(task, description=f"{plain(scope)}: counting", merges=False)
        else:
            self.bars.remove_task(task)
            if scope in self.started:  # a source read, not a vocabulary
                return
            self.done += 1
            self.bars.update(self.overall, description=f"vocabularies done: {self.done}")

    def _read(self, scope: str, done: int, total: int) -> None:
        """Reading a training source: the bytes read of the total, and the rate (the bar's
        own column says the time left)."""
        now = self.clock()
        started = self.started.setdefault(scope, now)
        rate = done / max(now - started, 1e-9)
        said = (f"{scope}: read {byte_size(done)} of {byte_size(total)}"
                + (f", {byte_size(rate)}/s" if done and now > started else ""))
        if self.plain_lines:
            if self._due(scope) is not False:
                self._line(said)
            return
        task = self.tasks.get(scope)
        if task is None:
            task = self.tasks[scope] = self.bars.add_task(plain(scope), total=total)
        self.bars.update(task, description=plain(said), completed=done, total=total)
