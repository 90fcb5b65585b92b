"""What `run` and `show` print of a run: its tables and notes, or its JSON document."""

from __future__ import annotations

import typer

from ..export import show_document
from ..identity import SHARED_SCOPE
from ..metrics import SECTION, RunResults, counting_convention, load_run_data, special_tokens_counted
from ..queries import complete_run
from ..store import AnalyzerDatabase
from .app import Console, fail
from .formats import json_text, plain
from .notes import early_stops, training_notes
from .views import TERMINAL_VIEWS, ShowOptions


def run_results(database: AnalyzerDatabase, run_id: int) -> RunResults:
    """A complete run's data, its sections computed once each as the command asks for them."""
    complete_run(database, run_id)
    return RunResults(load_run_data(database, run_id))


def show_run(database: AnalyzerDatabase, run_id: int, *, as_json: bool,
              vocab: str = SHARED_SCOPE, size: int | None = None,
              pretokenizer: str | None = None, results: RunResults | None = None) -> RunResults:
    """Print a run's tables (or, `as_json`, its show document): the terminal's view of each
    section the run has (`views.TERMINAL_VIEWS`); the results, for the report to use
    again."""
    results = results or run_results(database, run_id)
    frame, run, data = results.frame, results.run, results.data
    if pretokenizer is not None and pretokenizer not in run.pretokenizers:
        raise fail(f"run {run_id} has no pre-tokenizer {pretokenizer!r}; it has: "
                    f"{', '.join(run.pretokenizers)}")
    if vocab not in set(frame["vocab"]) and not (vocab == SHARED_SCOPE and not run.sizes):
        raise fail(f"run {run_id} has no vocabulary {vocab!r}; it has: "
                    f"{', '.join(dict.fromkeys(frame['vocab']))}")
    if size is not None and size not in set(frame[frame["vocab"] == vocab]["size"]):
        raise fail(f"run {run_id} has no size {size}; its sizes: {', '.join(map(str, run.sizes))}")
    if as_json:
        typer.echo(json_text(show_document(results)))
        return results
    console = Console()
    options = ShowOptions(vocab, size, pretokenizer, console.width)
    for name, view in TERMINAL_VIEWS:
        if SECTION[name].applies(run):
            for group in view(results, options):
                console.print(*group)
    for line in training_notes(run.training):
        console.print(plain(line))
    if run.count != "units" or run.special_tokens:  # the default says nothing
        console.print(plain(f"Counted as {counting_convention(run)}. Special tokens: "
                            f"{special_tokens_counted(run, data.vocabularies)}."))
    for note in early_stops(data.vocabularies, run.sizes):
        console.print(f"[yellow]Note:[/yellow] {plain(note)}")
    bad = [v.scope for v in data.vocabularies if v.roundtrip_ok is False]
    if bad:
        console.print(f"[red]Round trip failed[/red] for {plain(', '.join(bad))}: decoding did not "
                      "give the texts back. This is a bug; please report it.")
    return results
