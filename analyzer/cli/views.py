"""What `analyzer show` prints of each section of a run's results (`TERMINAL_VIEWS`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analyzer.identity import SHARED_SCOPE, VocabKind
from analyzer.metrics import RunResults

from .formats import plain
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


Printed = list[list]
"""What a view prints: groups of renderables, each group printed in one call."""


def records_view(results: RunResults, options: ShowOptions) -> Printed:
    """The tokens and overhead tables, one per pre-tokenizer (an extension's: one), each with
    the parity notes of the run's parity-aware vocabulary under it."""
    run, data = results.run, results.data
    extended = any(v.scope == options.vocab and v.kind == VocabKind.EXTENSION
                   for v in data.vocabularies)
    shown = [] if extended else [options.pretokenizer] if options.pretokenizer else run.pretokenizers
    parity = results["summaries"] if run.parity and options.vocab == SHARED_SCOPE else None
    found: Printed = []
    for index, split in enumerate(shown):
        found.append(summary_tables(run, results.frame, data.vocabularies, options.vocab,
                                    [options.size] if options.size else None, split,
                                    tokenizers=index == 0, width=options.width))
        found += [[f"[cyan]Parity:[/cyan] {plain(note)}"]
                  for note in (summary_notes(parity, split) if parity is not None else [])]
    return found


def frontier_view(results: RunResults, options: ShowOptions) -> Printed:
    """Cost against fairness, for the shared view of every size and pre-tokenizer."""
    if options.vocab != SHARED_SCOPE or options.pretokenizer is not None or options.size:
        return []
    configurations = results["summaries"]
    return [[frontier_table(configurations)]] if len(configurations) > 1 else []


def algorithms_view(results: RunResults, options: ShowOptions) -> Printed:
    """Each language under each algorithm, for the shared view of every size."""
    if options.vocab != SHARED_SCOPE or options.size is not None:
        return []
    premiums = results["algorithm_premiums"]
    if options.pretokenizer is not None:
        premiums = premiums[premiums["pretokenizer"] == options.pretokenizer]
    return [algorithm_tables(premiums, results.run.pivot)]


def extension_view(results: RunResults, options: ShowOptions) -> Printed:
    """What each added size does to each language, and the tokens that reach the pivot: for
    the shared view, or one extension's."""
    extended = any(v.scope == options.vocab and v.kind == VocabKind.EXTENSION
                   for v in results.data.vocabularies)
    if not (extended or options.vocab == SHARED_SCOPE):
        return []
    effects, reached = results["extension_effects"], results["extension_reach"]
    if extended:
        effects = effects[effects["vocab"] == options.vocab]
        reached = reached[reached["vocab"] == options.vocab]
    return [extension_tables(effects, reached, results.run.pivot, results.run.target)]


SHOWN_SCRIPTS = 4
"""The scripts a vocabulary's row names (the largest); the rest are in `export`."""


def vocabularies_view(results: RunResults, options: ShowOptions) -> Printed:
    """The production tokenizers' vocabularies: the scripts of their tokens, the words they
    split (the mean over the languages written with spaces), how much they share."""
    scripts = results["vocabulary_scripts"]
    if scripts.empty or options.vocab != SHARED_SCOPE:
        return []
    overlaps = results["vocabulary_overlaps"]
    frame = results.frame
    result = new_table("tokenizer", "tokens by script", "words split", "shares with (Jaccard)",
                   title="Production vocabularies: their tokens' scripts, the words they split "
                         "(mean over languages written with spaces), their overlap")
    for name, rows in scripts.groupby("tokenizer", sort=False):
        top = ", ".join(f"{row.script} {row.share:.1%}" for row in rows.head(SHOWN_SCRIPTS).itertuples())
        split = frame[(frame["vocab"] == name)]["word_split_pct"].dropna()
        pairs = overlaps[(overlaps["tokenizer"] == name) | (overlaps["other"] == name)]
        shared = ", ".join(f"{row.other if row.tokenizer == name else row.tokenizer} "
                           f"{row.jaccard:.3f}" for row in pairs.itertuples())
        result.add_row(plain(name), top, f"{split.mean():.1f}%" if len(split) else "-",
                       plain(shared) or "-")
    return [[result]]


TERMINAL_VIEWS: list[tuple[str, Callable[[RunResults, ShowOptions], Printed]]] = [
    ("records", records_view),
    ("summaries", frontier_view),
    ("algorithm_premiums", algorithms_view),
    ("extension_reach", extension_view),
    ("vocabulary_scripts", vocabularies_view),
]
"""What `analyzer show` prints, in its order, each under the section (`analyzer.metrics.SECTIONS`)
it shows: printed when the run has that section."""
