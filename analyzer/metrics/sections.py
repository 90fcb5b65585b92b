"""A run's sections: every result a run can have beyond its stored counts, each with when a run
has it and how it is computed from the run's data. The faces render from this one list:
`export` writes every section, `show --json` (and the service) those marked `shown`, and the
terminal and the HTML report each the sections they have a view of, when the run has them.

The list is open (`Registered`): the built-in sections are registered here with
`SECTIONS.register`, and a plug-in registers its own the same way (then its views, in
`analyzer.cli.views.TERMINAL_VIEWS` and `analyzer.report.page.REPORT_VIEWS`, which are
`Registered` lists too), and unregisters them when it is done (a test).

`RunResults` holds a run's data and computes each section (and the per-language frame they
stand on) once, however many faces of one command ask for it: `analyzer run` prints its tables
and writes its report from one computation.

    results = RunResults(load_run_data(db, run_id))
    results.frame                    # one row per (vocab, pretokenizer, size, lang)
    results["summaries"]             # cost, Gini and the frontier per configuration
    [s.name for s in SECTIONS if s.applies(results.run)]
    SECTIONS.register(Section("mine", applies, compute, shown=True), after="summaries")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import pandas as pd

from analyzer.external import load_prices
from analyzer.identity import load_plugins
from analyzer.store import RunRead

from .algorithms import algorithm_premiums
from .allocation import divergence_matrix
from .answer import premium_table
from .bill import Workload, bill, bill_sentence, unpriced
from .costs import model_costs
from .data import RunData
from .extension import extension_effects, extension_reach
from .fairness import (
    attribution,
    equal_cost_sizes,
    own_superbpe_effects,
    summaries,
    superbpe_effects,
)
from .frames import language_metrics, request_framing
from .verdicts import Verdicts, verdicts
from .vocabularies import vocabulary_overlaps, vocabulary_scripts


class RunResults:
    """A run's data, and its sections computed once each, on first use."""

    def __init__(self, data: RunData, frame: pd.DataFrame | None = None):
        self.data = data
        self._computed: dict[str, Any] = {} if frame is None else {"records": frame}

    @property
    def run(self) -> RunRead:
        return self.data.run

    @property
    def frame(self) -> pd.DataFrame:
        """Every (vocabulary, pre-tokenizer, size, language) with its metrics (`records`)."""
        return self["records"]

    def __getitem__(self, name: str) -> Any:
        if name not in self._computed:
            self._computed[name] = SECTIONS[name].compute(self)
        return self._computed[name]

    def equal_cost_sizes(self, reference: int | None = None) -> list[dict]:
        """The equal-cost size of each language under each vocabulary (`fairness.
        equal_cost_sizes`) against the pivot at `reference` (default: the largest size, the
        section's); computed once per reference, however many faces ask (the report draws the
        largest size but one, so that a language can be seen to reach it)."""
        key = f"equal_cost_sizes:{reference}"
        if key not in self._computed:
            data = self.data
            self._computed[key] = [] if data.fairness is None else \
                equal_cost_sizes(data, reference)
        return self._computed[key]

    def verdicts(self) -> Verdicts:
        """The cheapest, the fairest and the frontier (`analyzer.metrics.verdicts`): one answer,
        whichever face asks."""
        if "verdicts:" not in self._computed:
            self._computed["verdicts:"] = verdicts(self["summaries"], self.run.pretokenizers)
        return self._computed["verdicts:"]

    def bill(self, workload: Workload, prices: Path | None = None) -> dict:
        """What `workload` costs a month on each priced model (`bill.bill`), from the price
        table at `prices` (default: the packaged one), as every face writes it: the workload,
        a row per model, and the answer in a sentence."""
        key = f"bill:{workload}:{prices}"
        if key not in self._computed:
            table = load_prices(prices)
            rows = bill(self.data, workload, table)
            self._computed[key] = {
                "workload": {"tokens": workload.tokens, "reference": self.run.pivot,
                             "counted_by": workload.counted_by, "mix": dict(workload.mix),
                             "requests": workload.requests},
                "said": bill_sentence(rows, workload, self.run.pivot, self.run.languages,
                                      unpriced(self.data, table)),
                "rows": rows}
        return self._computed[key]

    def premium_table(self) -> pd.DataFrame:
        """Each language's premium under each vocabulary that counts every language, at its
        largest size (`answer.premium_table`): the report's first table."""
        if "premium_table" not in self._computed:
            self._computed["premium_table"] = premium_table(self.frame, self.run.pretokenizers)
        return self._computed["premium_table"]

    def model_costs(self, prices: Path | None = None) -> pd.DataFrame:
        """What the same content costs each language under each priced model whose tokenizer
        the run measured (`costs.model_costs`), from the price table at `prices` (default: the
        packaged one); computed once per table, however many faces ask (`results` writes its
        data file and its report from one)."""
        key = f"model_costs:{prices}"
        if key not in self._computed:
            run = self.run
            self._computed[key] = model_costs(self.frame, run.pivot, load_prices(prices),
                                              request_framing(self.data.vocabularies),
                                              len(run.measured_units))
        return self._computed[key]


class Named(Protocol):
    """What a registered list holds: anything with a name (a section, a view)."""

    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


class Registered(Generic[N]):
    """A list of named entries that code outside the package adds to: a run's sections here,
    the terminal's and the report's views of them (`analyzer.cli.views`, `analyzer.report.page`).
    One way in for everyone: the built-in entries are registered as a plug-in's are.

    An entry goes at the end, or right `after` or `before` a named one (a plug-in's view of a
    section beside the built-in views it belongs with); a name is taken once. Iterating gives
    the entries in order; `[name]` gives one by its name. Either first imports the installed
    plug-ins (`identity.load_plugins`), so a plug-in's entries are there whichever face asks
    first.

    >>> views = Registered("view")
    >>> for name in ("first", "last", "middle"):
    ...     _ = views.register(Section(name, _always, list), **({"after": "first"}
    ...                                                        if name == "middle" else {}))
    >>> [view.name for view in views]
    ['first', 'middle', 'last']
    """

    def __init__(self, what: str):
        self.what = what
        """What an entry is, in a refusal's words (`section`, `terminal view`)."""
        self._entries: list[N] = []

    def register(self, entry: N, *, after: str | None = None, before: str | None = None) -> N:
        """Add `entry` (returned): at the end, or right after or before the entry named. A name
        already taken is refused (unregister the old entry first), and so is a place by a name
        no entry has."""
        if after is not None and before is not None:
            raise ValueError(f"a {self.what} goes after one entry or before one, not both")
        if any(existing.name == entry.name for existing in self._entries):
            raise ValueError(f"a {self.what} named {entry.name!r} is already registered "
                             f"(unregister it first)")
        at = len(self._entries)
        for where, shift in ((after, 1), (before, 0)):
            if where is not None:
                at = self._index(where) + shift
        self._entries.insert(at, entry)
        return entry

    def unregister(self, name: str) -> N:
        """Forget the entry named `name` (returned): a plug-in's, when a test is done with it."""
        return self._entries.pop(self._index(name))

    def _index(self, name: str) -> int:
        for index, entry in enumerate(self._entries):
            if entry.name == name:
                return index
        raise KeyError(f"no {self.what} named {name!r} is registered (the {self.what}s: "
                       f"{', '.join(entry.name for entry in self._entries)})")

    def __getitem__(self, name: str) -> N:
        load_plugins()
        return self._entries[self._index(name)]

    def __contains__(self, name: object) -> bool:
        return any(entry.name == name for entry in self._entries)

    def __iter__(self) -> Iterator[N]:
        load_plugins()
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class Section:
    """One result of a run: its name (the key of `show --json` and `export`), whether a run
    has it, and how it is computed (a frame, or a list of JSON-ready rows)."""

    name: str
    applies: Callable[[RunRead], bool]
    compute: Callable[[RunResults], Any]
    shown: bool = False
    """In `show --json` and `GET /api/runs/{id}`, not only in `export`."""


def _needs_fairness(compute: Callable[[RunData], Any], empty: Any) -> Callable[[RunResults], Any]:
    """A section computed from the per-merge data, empty when the data was loaded without it."""
    return lambda results: compute(results.data) if results.data.fairness is not None else empty


def divergence(data: RunData) -> list[dict]:
    """Per vocabulary trained on every language, and size: the Jensen-Shannon divergence between
    every two languages' token distributions (`matrix[i][j]`, languages in run order)."""
    assert data.fairness is not None
    found = []
    for (vocab, pretokenizer, size), by_lang in data.fairness.histograms.items():
        if not data.kind(vocab, pretokenizer).trained_on_every_language:
            continue
        matrix = divergence_matrix(by_lang, data.run.languages)
        found.append({"vocab": vocab, "pretokenizer": pretokenizer, "size": size,
                      "languages": list(matrix.index),
                      "matrix": [[round(float(v), 6) for v in row] for row in matrix.to_numpy()]})
    return found


def _always(run: RunRead) -> bool:
    return True


def _trained(run: RunRead) -> bool:
    return bool(run.sizes)


SECTIONS: Registered[Section] = Registered("section")
"""Every section, in the order `export` writes them: the built-in ones, then a plug-in's (where
it put them)."""

for _section in (
    Section("records", _always, lambda results: language_metrics(results.data), shown=True),
    Section("summaries", _always, lambda results: summaries(results.data), shown=True),
    Section("verdicts", _always, lambda results: results.verdicts().rows(), shown=True),
    Section("equal_cost_sizes", _trained, lambda results: results.equal_cost_sizes(), shown=True),
    Section("attribution", _trained, lambda results: attribution(results.data)),
    Section("divergence", lambda run: bool(run.sizes) and len(run.languages) > 2,
            _needs_fairness(divergence, [])),
    Section("superbpe_effects", lambda run: bool(run.superbpe),
            _needs_fairness(superbpe_effects, [])),
    Section("own_superbpe_effects", lambda run: bool(run.superbpe) and run.per_language,
            _needs_fairness(own_superbpe_effects, [])),
    Section("extension_effects", lambda run: bool(run.extend),
            lambda results: extension_effects(results.data)),
    Section("extension_reach", lambda run: bool(run.extend),
            _needs_fairness(extension_reach, pd.DataFrame()), shown=True),
    Section("algorithm_premiums", lambda run: len(run.algorithms) > 1,
            lambda results: algorithm_premiums(results.data), shown=True),
    Section("model_costs", _always, lambda results: results.model_costs(), shown=True),
    Section("vocabulary_scripts", _always, lambda results: vocabulary_scripts(results.data),
            shown=True),
    Section("vocabulary_overlaps", _always, lambda results: vocabulary_overlaps(results.data),
            shown=True),
):
    SECTIONS.register(_section)


F = TypeVar("F", covariant=True)
"""What draws a face's views (covariant: a view drawn by a function is a view of the face's
callable type, which the function is)."""


@dataclass(frozen=True)
class View(Generic[F]):
    """A face's view of a section (the terminal's, the report's): its own name, the section it
    shows (drawn only when the run has that section), and what draws it (`draw`, the face's
    callable: `analyzer.cli.views` and `analyzer.report.page` say what it is given)."""

    name: str
    section: str
    draw: F


class Views(Registered[View[F]]):
    """A face's views, in the order it shows them (`Registered`): each of a registered section."""

    def register(self, entry: View[F], *, after: str | None = None,
                 before: str | None = None) -> View[F]:
        """Add a view (returned) of a registered section; see `Registered.register`."""
        if entry.section not in SECTIONS:
            raise ValueError(f"the {self.what} {entry.name!r} shows the section "
                             f"{entry.section!r}, which is not registered (register the section "
                             "first: analyzer.metrics.SECTIONS.register)")
        return super().register(entry, after=after, before=before)

    def of(self, run: RunRead) -> list[F]:
        """What draws each view whose section `run` has, in order."""
        return [view.draw for view in self if SECTIONS[view.section].applies(run)]
