"""What `run` and `show` print of a run: its tables and notes, or its JSON document."""

from __future__ import annotations

import typer
from rich.table import Table

from ..export import export_csv, show_document
from ..identity import SHARED_SCOPE
from ..metrics import (
    RunResults,
    counting_convention,
    estimators_note,
    load_run_data,
    special_tokens_counted,
)
from ..metrics.bill import Workload
from ..queries import complete_run
from ..store import AnalyzerDatabase
from .app import Console, fail
from .formats import json_text, plain
from .notes import early_stops, training_notes
from .tables import MARKDOWN_WIDTH, markdown_text, training_sample_table
from .views import TERMINAL_VIEWS, ShowOptions


def run_results(database: AnalyzerDatabase, run_id: int,
                reference: str | None = None) -> RunResults:
    """A complete run's data, its sections computed once each as the command asks for them,
    against its pivot or another `reference` language of the run."""
    complete_run(database, run_id)
    return RunResults(load_run_data(database, run_id, reference=reference))


def show_run(database: AnalyzerDatabase, run_id: int, *, output: str = "table",
             vocab: str = SHARED_SCOPE, size: int | None = None,
             pretokenizer: str | None = None, intervals: bool = False,
             results: RunResults | None = None, reference: str | None = None,
             workload: Workload | None = None) -> RunResults:
    """Print a run's results as `output` says (`options.ShowFormat`): its tables (the terminal's
    view of each section the run has, `views.TERMINAL_VIEWS`) and notes, the same as Markdown,
    its records as CSV, or its show document as JSON. The results, for the report to use
    again. `reference`: a language of the run to measure against instead of its pivot;
    `workload`: a month's workload to price on every model (`show --bill`)."""
    results = results or run_results(database, run_id, reference)
    frame, run, data = results.frame, results.run, results.data
    if pretokenizer is not None and pretokenizer not in run.pretokenizers:
        raise fail(f"run {run_id} has no pre-tokenizer {pretokenizer!r}; it has: "
                    f"{', '.join(run.pretokenizers)}")
    if vocab not in set(frame["vocab"]) and not (vocab == SHARED_SCOPE and not run.sizes):
        raise fail(f"run {run_id} has no vocabulary {vocab!r}; it has: "
                    f"{', '.join(dict.fromkeys(frame['vocab']))}")
    if size is not None and size not in set(frame[frame["vocab"] == vocab]["size"]):
        raise fail(f"run {run_id} has no size {size}; its sizes: {', '.join(map(str, run.sizes))}")
    if output == "json":
        typer.echo(json_text(show_document(results, workload=workload)))
        return results
    if output == "csv":
        typer.echo(export_csv(results), nl=False)
        return results
    console = Console()
    markdown = output == "markdown"
    options = ShowOptions(vocab, size, pretokenizer, MARKDOWN_WIDTH if markdown else console.width,
                          intervals, workload)
    printed: list = []
    for view in TERMINAL_VIEWS.of(run):
        printed += view(results, options)
    printed += [[plain(line)] for line in training_notes(run.training)]
    if run.training:
        printed.append([training_sample_table(run.training)])
    printed.append([plain(estimators_note(run, "unit_premium in --json and export"))])
    if run.count != "units" or run.special_tokens:  # the default says nothing
        printed.append([plain(f"Counted as {counting_convention(run)}. Special tokens: "
                              f"{special_tokens_counted(run, data.vocabularies)}.")])
    printed += [[f"[yellow]Note:[/yellow] {plain(note)}"]
                for note in early_stops(data.vocabularies, run.sizes)]
    bad = [v.scope for v in data.vocabularies if v.roundtrip_ok is False]
    if bad:
        printed.append([f"[red]Round trip failed[/red] for {plain(', '.join(bad))}: decoding did "
                        "not give the texts back. This is a bug; please report it."])
    for group in printed:
        if markdown:
            typer.echo("\n\n".join(markdown_text(item) for item in group) + "\n")
        else:
            for item in group:
                console.print(item)
                if isinstance(item, Table):
                    console.print()  # a blank line closes a table
    return results
