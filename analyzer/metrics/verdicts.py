"""The verdicts a reader comes for, defined once for every face (the terminal, `show --json`,
`export`, the report, the results page, the service): which tokenizer costs these languages
least, which is fairest, and which are on the cost/fairness frontier.

The candidates are what the answer table compares: each tokenizer the run measured, and each
vocabulary it trained at its largest size (`premium_table`'s columns). For each:

- **cheapest**: the fewest tokens over every language of the run together (the summaries'
  `tokens`), what a workload in this mix of languages is billed by, price aside;
- **fairest**: the lowest Gini of the languages' premiums (0: every language pays the same; 1:
  one language pays for all). The Gini weighs the pivot as one language among the run's, so it
  does not change with the reference language, and a tokenizer wasteful on the pivot alone is
  not called fair for it, as it was by the median premium the report used (which named another
  "fairest" than the terminal's Gini for one run);
- **frontier**: no other configuration of the run is both cheaper and fairer (the summaries'
  `frontier`, `pareto_frontier`).

>>> import pandas as pd
>>> rows = pd.DataFrame({"vocab": ["a", "b", "c"], "pretokenizer": [None] * 3,
...                      "kind": ["production"] * 3, "size": [100, 200, 300],
...                      "tokens": [900, 1000, 1200], "gini": [0.20, 0.05, 0.10],
...                      "frontier": [True, True, False]})
>>> found = verdicts(rows, ["words"])
>>> found.cheapest.name, found.fairest.name, [c.name for c in found.frontier]
('a', 'b', ['a', 'b'])
>>> found.sentences()[1]
'The fairest is b: the Gini of its premiums is 0.050 (0: every language pays the same).'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from analyzer.identity import VocabKind

from .answer import column_label

VERDICT_COLUMNS = ["name", "vocab", "pretokenizer", "size", "tokens", "gini", "frontier",
                   "cheapest", "fairest"]
"""A candidate's row (`Verdicts.rows`): its name as the answer table's column, which
configuration it is, its tokens over every language, the Gini of its premiums, whether it is on
the frontier, the cheapest, the fairest."""


@dataclass(frozen=True)
class Candidate:
    """One tokenizer of the verdicts: its name as the answer table's column, and its numbers."""

    name: str
    vocab: str
    pretokenizer: str | None
    size: int
    tokens: int
    """Over every language of the run together."""
    gini: float
    frontier: bool


@dataclass(frozen=True)
class Verdicts:
    """The cheapest, the fairest and those on the frontier, among `candidates` (all of them,
    cheapest first); None where the run has nothing to compare (one candidate or none)."""

    candidates: tuple[Candidate, ...]
    cheapest: Candidate | None
    fairest: Candidate | None
    frontier: tuple[Candidate, ...]

    def sentences(self) -> list[str]:
        """The verdicts in words, the same in every face."""
        if self.cheapest is None or self.fairest is None:
            return []
        cheapest, fairest = self.cheapest, self.fairest
        tied = [c.name for c in self.candidates if c != cheapest and c.tokens == cheapest.tokens]
        runner_up = next((c for c in self.candidates
                          if c != cheapest and c.tokens != cheapest.tokens), None)
        fewer = (f", {1 - cheapest.tokens / runner_up.tokens:.1%} fewer than {runner_up.name}"
                 if runner_up is not None and runner_up.tokens else "")
        even = [c.name for c in self.candidates
                if c != fairest and _fairness(c) == _fairness(fairest)]
        said = [f"The cheapest for these languages is {cheapest.name}{_tied(tied)}: "
                f"{cheapest.tokens:,} tokens for all of them{fewer}.",
                f"The fairest is {fairest.name}{_tied(even)}: the Gini of its premiums is "
                f"{fairest.gini:.3f} (0: every language pays the same)."]
        if cheapest == fairest:
            said.append(f"{cheapest.name} is both: nothing else is cheaper or fairer.")
        else:
            names = [c.name for c in self.frontier]
            said.append(f"On the cost/fairness frontier (nothing both cheaper and fairer): "
                        f"{', '.join(names)}.")
        return said

    def rows(self) -> pd.DataFrame:
        """A row per candidate, cheapest first, with whether each is the cheapest or the
        fairest: `show --json`, `export` and the service's run document."""
        frame = pd.DataFrame([asdict(c) for c in self.candidates],
                             columns=list(Candidate.__dataclass_fields__))
        frame["cheapest"] = [c == self.cheapest for c in self.candidates]
        frame["fairest"] = [c == self.fairest for c in self.candidates]
        return frame[VERDICT_COLUMNS]


def verdicts(summaries: pd.DataFrame, pretokenizers: list[str]) -> Verdicts:
    """The verdicts over the `summaries` (`analyzer.metrics.summaries`) of a run whose
    pre-tokenizers are `pretokenizers`: each configuration at its largest size is a candidate."""
    if summaries.empty:
        return Verdicts((), None, None, ())
    keys = ["vocab", "pretokenizer"]
    largest = summaries.groupby(keys, dropna=False, sort=False)["size"].transform("max")
    rows = summaries[summaries["size"] == largest]
    several = len(pretokenizers) > 1
    candidates = tuple(sorted(
        (Candidate(column_label(row.vocab, VocabKind(row.kind), row.pretokenizer, int(row.size),
                                several),
                   row.vocab, row.pretokenizer, int(row.size), int(row.tokens), float(row.gini),
                   bool(row.frontier))
         for row in rows.itertuples()), key=lambda c: c.tokens))
    if len(candidates) < 2:
        return Verdicts(candidates, None, None, tuple(c for c in candidates if c.frontier))
    # A tie in tokens goes to the fairer, in fairness to the cheaper (and the sentences say so).
    cheapest = min(candidates, key=lambda c: (c.tokens, _fairness(c)))
    fairest = min(candidates, key=lambda c: (_fairness(c), c.tokens))
    return Verdicts(candidates, cheapest, fairest, tuple(c for c in candidates if c.frontier))


def _fairness(candidate: Candidate) -> float:
    """A candidate's Gini to 12 places: against another reference a Gini differs in its last
    bits, never in its verdict (NaN: last)."""
    return round(candidate.gini, 12) if candidate.gini == candidate.gini else float("inf")


def _tied(names: list[str]) -> str:
    """` (tied with a and b)`, or nothing."""
    if not names:
        return ""
    return " (tied with " + (names[0] if len(names) == 1 else
                             ", ".join(names[:-1]) + " and " + names[-1]) + ")"


__all__ = ["VERDICT_COLUMNS", "Candidate", "Verdicts", "verdicts"]
