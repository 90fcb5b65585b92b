"""A run's progress in words, for its watch page: how much of the whole run is done, for how
long it has run and how long it has left, and each job's line ("English (eng_Latn): training,
448 of 3,840 merges").

A run's process reports each job's steps (`analyzer.runs.plan.Report`: a label, a phase, done
and total); the server keeps them as they come (`RunProgress.step`). How many jobs there are
is known before the run starts (`planned_jobs`), so the share done is of the whole run, not of
the jobs that happen to have started. The time left is the rest at the rate seen since the
first step: "estimating…" (None) until there is a rate.

    progress = RunProgress(jobs=13, began=0.0)
    progress.step("eng_Latn", "train", 448, 3840, now=10.0)
    progress.document({"eng_Latn": "English"}, now=20.0)["lines"][0]["said"]
    # 'English (eng_Latn): training, 448 of 3,840 merges'
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from analyzer.runs.plan import STEPS

TRAINED_SHARE = 0.9
"""The share of a job's work its training is taken for (its counting the rest): a job that
has trained all its merges is 90% done. An estimate's, not a measure's, weight; it only has to
grow as the job goes on."""



def planned_jobs(resolved) -> int:
    """How many jobs a resolved run (`analyzer.runs.ResolvedRun`) reports progress for: its
    job plans (each vocabulary trained), then what its local builders make, each under a label
    of its own (each production tokenizer measured, each tokenizer extended)."""
    from analyzer.runs.builders import make_plans

    made = resolved.made
    return (len(make_plans(resolved)) + len(made.get("tokenizers") or [])
            + len(made.get("extend") or []))


def job_share(phase: str, done: int, total: int) -> float:
    """How much of one job is done, from 0 to 1, growing as it goes on.

    >>> job_share("train", 448, 3840) < job_share("count", 0, 1) < job_share("done", 1, 1)
    True
    """
    if phase == "done":
        return 1.0
    if phase in STEPS:
        return TRAINED_SHARE * (min(done, total) / total if total > 0 else 0.0)
    if phase == "count":
        return TRAINED_SHARE
    return 0.0


def named(label: str, names: dict[str, str]) -> str:
    """A job's label with the language it starts with named in words (a language of the run's:
    `names` maps its code to its name).

    >>> named("eng_Latn", {"eng_Latn": "English"}), named("shared [words]", {})
    ('English (eng_Latn)', 'shared [words]')
    >>> named("eng_Latn [words]", {"eng_Latn": "English"})
    'English (eng_Latn) [words]'
    """
    code, _, rest = label.partition(" ")
    if code not in names:
        return label
    return f"{names[code]} ({code})" + (f" {rest}" if rest else "")


def said(label: str, phase: str, done: int, total: int, names: dict[str, str]) -> str:
    """One job's line, in words.

    >>> said("eng_Latn", "train", 448, 3840, {"eng_Latn": "English"})
    'English (eng_Latn): training, 448 of 3,840 merges'
    >>> said("tur_Latn", "count", 0, 1, {"tur_Latn": "Turkish"})
    'Turkish (tur_Latn): counting the tokens of every text'
    >>> said("source web", "read", 2048, 4096, {})
    'source web: reading, 2,048 of 4,096 bytes'
    """
    who = named(label, names)
    if phase in STEPS:
        if total > 1:
            return f"{who}: training, {done:,} of {total:,} {STEPS[phase]}"
        return f"{who}: training"
    if phase == "count":
        return f"{who}: counting the tokens of every text"
    if phase == "read":
        return f"{who}: reading, {done:,} of {total:,} bytes"
    if phase == "done":
        return f"{who}: done"
    return f"{who}: {phase}"


@dataclass
class RunProgress:
    """A run's steps as its process reports them, and when: kept by the server while it runs
    the run. `began` and every `now` are the server's monotonic clock, in seconds."""

    jobs: int | None
    """The jobs the run reports progress for (`planned_jobs`); None when unknown."""
    began: float
    steps: dict[str, dict] = field(default_factory=dict)
    """Each label's last step: `{stage, done, total}` (`GET /api/runs/{id}`'s `progress`)."""
    sources: set[str] = field(default_factory=set)
    """The labels of training sources read (not jobs: their bytes are read before any job)."""
    first: tuple[float, float] | None = None
    """When the first job's step came, and the share done then: where the rate is measured
    from (the run's loading before it is no part of the rate)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    """Steps come on the thread that follows the run; watchers read them on others."""

    def step(self, label: str, phase: str, done: int, total: int, now: float) -> None:
        with self.lock:
            self.steps = {**self.steps, label: {"stage": phase, "done": done, "total": total}}
            if phase == "read":
                self.sources.add(label)
            elif self.first is None and label not in self.sources:
                self.first = (now, self.share())

    def _jobs(self) -> list[dict]:
        return [step for label, step in self.steps.items() if label not in self.sources]
    # `steps` is replaced whole at each step, never changed in place: a reader holds one.

    def total(self) -> int:
        """The run's jobs: those planned, or more if more have reported (never fewer)."""
        return max(self.jobs or 0, len(self._jobs()))

    def share(self) -> float:
        """The share of the whole run done, from 0 to 1 (never down as the run goes on)."""
        total = self.total()
        return sum(job_share(step["stage"], step["done"], step["total"])
                   for step in self._jobs()) / total if total else 0.0

    def left(self, now: float) -> float | None:
        """Seconds left at the rate seen since the first job's step; None until there is a
        rate."""
        if self.first is None:
            return None
        since, at_first = self.first
        share = self.share()
        if share >= 1:
            return 0.0
        if now <= since or share <= at_first:
            return None
        return (now - since) * (1 - share) / (share - at_first)

    def document(self, names: dict[str, str], now: float) -> dict:
        """What the watch page shows (`GET /api/runs/{id}`'s `overall`): the jobs `done` of
        `total`, the `share` of the run done, the seconds `elapsed` and `left` (None:
        estimating), and each job's (and source's) line in words (`lines`)."""
        return {"total": self.total(),
                "done": sum(1 for step in self._jobs() if step["stage"] == "done"),
                "share": self.share(), "elapsed": max(0.0, now - self.began),
                "left": self.left(now),
                "lines": [{"label": label, "stage": step["stage"],
                           "said": said(label, step["stage"], step["done"], step["total"], names)}
                          for label, step in self.steps.items()]}
