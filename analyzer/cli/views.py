"""What `analyzer show` prints of each section of a run's results (`TERMINAL_VIEWS`): a view is
registered under the section it shows (`TERMINAL_VIEWS.register(View(name, section, draw))`),
the built-in ones below as a plug-in's are; `draw(results, options)` returns what it prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analyzer.bpe.pretokenize import NONE
from analyzer.external.vocabulary import script_word
from analyzer.identity import SHARED_SCOPE
from analyzer.metrics import RunResults, View, Views, configuration_name, headline_vocabulary
from analyzer.metrics.bill import Workload

from .formats import plain, with_interval
from .notes import summary_notes
from .tables import algorithm_tables, extension_tables, frontier_table, new_table, summary_tables


@dataclass(frozen=True)
class ShowOptions:
    """What `analyzer show` was asked to show: one vocabulary, and maybe one size and one
    pre-tokenizer, at a terminal's width."""

    vocab: str
    size: int | None
    pretokenizer: str | None
    width: int
    intervals: bool = False
    """Each premium, cost and Gini with its 95 % interval (wider tables)."""
    workload: Workload | None = None
    """A month's workload to price on every model (`show --bill`)."""


Printed = list[list]
"""What a view prints: groups of renderables, each group printed in one call."""


def verdicts_view(results: RunResults, options: ShowOptions) -> Printed:
    """The verdicts, first: the cheapest for these languages, the fairest, the frontier
    (`analyzer.metrics.verdicts`, the same sentences as the report's), for the whole run's view."""
    if options.vocab != SHARED_SCOPE or options.pretokenizer is not None or options.size:
        return []
    return [[f"[bold]{plain(sentence)}[/bold]"] for sentence in results.verdicts().sentences()]


def bill_view(results: RunResults, options: ShowOptions) -> Printed:
    """What the workload of `show --bill` costs a month on each priced model, cheapest first."""
    if options.workload is None:
        return []
    found = results.bill(options.workload)
    if found["rows"].empty:
        return [[f"[bold]{plain(found['said'])}[/bold]"]]
    table = new_table("model", "tokenizer", "tokens a month", "US$ a month", "vs cheapest",
                      title=plain("The bill: input tokens a month, at each model's dated price"
                                  + ("; 95 % intervals" if options.intervals else "")))
    table.columns[3].no_wrap = True  # an interval is never broken across lines
    for row in found["rows"].itertuples():
        table.add_row(plain(row.model), plain(row.tokenizer), f"{row.tokens:,.0f}",
                      with_interval(row.cost, row.cost_ci_low, row.cost_ci_high, ",.2f",
                                    options.intervals, between="\n"),
                      "-" if row.vs_cheapest != row.vs_cheapest else f"{row.vs_cheapest:.2f}x")
    return [[f"[bold]{plain(found['said'])}[/bold]"], [table]]


def records_view(results: RunResults, options: ShowOptions) -> Printed:
    """The tokens and overhead tables, one per pre-tokenizer (an extension's: one), each with
    the parity notes of the run's parity-aware vocabulary under it."""
    run, data = results.run, results.data
    extended = any(v.scope == options.vocab and v.kind.extends
                   for v in data.vocabularies)
    shown = [] if extended else [options.pretokenizer] if options.pretokenizer else run.pretokenizers
    parity = results["summaries"] if run.parity and options.vocab == SHARED_SCOPE else None
    found: Printed = []
    for index, split in enumerate(shown):
        found.append(summary_tables(run, results.frame, data.vocabularies, options.vocab,
                                    [options.size] if options.size else None, split,
                                    tokenizers=index == 0, width=options.width,
                                    intervals=options.intervals))
        found += [[f"[cyan]Parity:[/cyan] {plain(note)}"] for note in (
            summary_notes(parity, split, options.intervals) if parity is not None else [])]
    return found


def frontier_view(results: RunResults, options: ShowOptions) -> Printed:
    """Cost against fairness, for the shared view of every size and pre-tokenizer."""
    if options.vocab != SHARED_SCOPE or options.pretokenizer is not None or options.size:
        return []
    configurations = results["summaries"]
    if len(configurations) < 2:
        return []
    vocab, pretokenizer, size = headline_vocabulary(results.run, results.data.vocabularies)
    rows = configurations[(configurations["vocab"] == vocab) & (configurations["size"] == size)
                          & (configurations["pretokenizer"].fillna(NONE) == (pretokenizer or NONE))]
    # the reference named as its row of the table names it (an extension by its tokens added)
    reference = configuration_name(rows.iloc[0]) if len(rows) else f"{vocab} at {size:,}"
    return [[frontier_table(configurations, reference, options.intervals)]]


def algorithms_view(results: RunResults, options: ShowOptions) -> Printed:
    """Each language under each algorithm, for the shared view of every size."""
    if options.vocab != SHARED_SCOPE or options.size is not None:
        return []
    premiums = results["algorithm_premiums"]
    if options.pretokenizer is not None:
        premiums = premiums[premiums["pretokenizer"] == options.pretokenizer]
    return [algorithm_tables(premiums, results.run.pivot, options.width)]


def extension_view(results: RunResults, options: ShowOptions) -> Printed:
    """What each added size does to each language, and the tokens that reach the pivot: for
    the shared view, or one extension's."""
    extended = any(v.scope == options.vocab and v.kind.extends
                   for v in results.data.vocabularies)
    if not (extended or options.vocab == SHARED_SCOPE):
        return []
    effects, reached = results["extension_effects"], results["extension_reach"]
    if extended:
        effects = effects[effects["vocab"] == options.vocab]
        reached = reached[reached["vocab"] == options.vocab]
    return [extension_tables(effects, reached, results.run.pivot, results.run.target)]


SHOWN_SCRIPTS = 2
"""The scripts a vocabulary's row names (the largest); the rest are in `export`."""


def vocabularies_view(results: RunResults, options: ShowOptions) -> Printed:
    """The production tokenizers' vocabularies: the scripts of their tokens, the words they
    split (the mean over the languages written with spaces), the vocabulary each shares most
    with."""
    scripts = results["vocabulary_scripts"]
    if scripts.empty or options.vocab != SHARED_SCOPE:
        return []
    overlaps = results["vocabulary_overlaps"]
    frame = results.frame
    result = new_table("tokenizer", "tokens by script", "words split", "closest (Jaccard)",
                       title="Production vocabularies")
    for name, rows in scripts.groupby("tokenizer", sort=False):
        top = ", ".join(f"{script_word(row.script)} {row.share:.0%}"
                        for row in rows.head(SHOWN_SCRIPTS).itertuples())
        split = frame[(frame["vocab"] == name)]["word_split_pct"].dropna()
        pairs = overlaps[(overlaps["tokenizer"] == name) | (overlaps["other"] == name)]
        closest = pairs.loc[pairs["jaccard"].idxmax()] if not pairs.empty else None
        other = None if closest is None else \
            closest["other"] if closest["tokenizer"] == name else closest["tokenizer"]
        result.add_row(plain(name), top, f"{split.mean():.1f}%" if len(split) else "-",
                       "-" if closest is None else f"{plain(other)} {closest['jaccard']:.2f}")
    return [[result, "words split: words cut into 2+ tokens, mean over languages with spaces"]]


TerminalView = Callable[[RunResults, ShowOptions], Printed]
"""What draws a terminal view: the run's results and what `show` was asked, to what it prints."""

TERMINAL_VIEWS: Views[TerminalView] = Views("terminal view")
"""What `analyzer show` prints, in its order, each under the section (`analyzer.metrics.SECTIONS`)
it shows: printed when the run has that section. A plug-in's go at the end, or where it says
(`after=`, `before=` a view's name)."""

for _view in (View("verdicts", "verdicts", verdicts_view),
              View("bill", "verdicts", bill_view),
              View("records", "records", records_view),
              View("frontier", "summaries", frontier_view),
              View("algorithms", "algorithm_premiums", algorithms_view),
              View("extension", "extension_reach", extension_view),
              View("vocabularies", "vocabulary_scripts", vocabularies_view)):
    TERMINAL_VIEWS.register(_view)
