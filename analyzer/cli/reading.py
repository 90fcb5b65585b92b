"""What a run holds, read back: `report`, `results`, `runs`, `show`, `merges`, `tokenize`, `export`."""

from __future__ import annotations

import math
import webbrowser
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..bpe.readable import PARTIAL_KEY, readable
from ..identity import BASE_PRETOKENIZER, SHARED_SCOPE
from ..report.files import DEFAULT_OUT
from .app import Console, app, emit, fail, open_database, writing
from .formats import json_text, plain
from .help import HelpCommand
from .options import (
    BillOption,
    CountedByOption,
    DbOption,
    ExportFormat,
    FormatOption,
    IntervalsOption,
    JsonOption,
    MixOption,
    ReferenceOption,
    RequestsOption,
    ShowFormat,
)
from .parsing import check_output_file, check_output_folder, output_folder, output_format, typed_text

if TYPE_CHECKING:
    from ..store import AnalyzerDatabase

FULL_PATHS_HELP = ("Name the corpus's and the tokenizers' files with their folders on this "
                   "machine (default: by name and SHA-256 only, so the pages can be published).")


@app.command("report", cls=HelpCommand)
def report_command(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id (see analyzer runs)."),
    out: Path = typer.Option(DEFAULT_OUT, help="Folder for the pages."),
    open_report: bool = typer.Option(False, "--open", help="Open the page in a browser."),
    self_contained: bool = typer.Option(False, help="Inline plotly.js: one file to send."),
    price: float = typer.Option(1.0, help="Price per million tokens, for the cost view."),
    context: int = typer.Option(128_000, help="Context window in tokens, for the cost view."),
    prices: Path = typer.Option(
        None, "--prices", dir_okay=False, help="A price table of your own (TOML, the format of "
        "analyzer's prices.toml): what each model charges, and its context window."),
    full_paths: bool = typer.Option(False, "--full-paths", help=FULL_PATHS_HELP),
    reference: str = ReferenceOption,
    db: Path = DbOption,
) -> None:
    """Write a run's HTML report (and the index of runs); it works offline. --price and
    --context price the trained vocabularies; models use the price table. With --reference,
    the page measures against that language (run-N-vs-LANG.html, beside run-N.html)."""
    from ..external import load_prices
    from ..report import write_report
    from .shown import run_results

    if not (math.isfinite(price) and price >= 0) or context < 1:
        raise fail("--price must be a number 0 or more and --context 1 or more")
    check_output_folder(out)
    if prices is not None:
        load_prices(prices)  # a bad table is said before anything is written
    database = open_database(db)
    results = run_results(database, run_id, reference)
    with writing(out):
        path = write_report(database, run_id, out, self_contained=self_contained, price=price,
                            context_window=context, prices=prices, full_paths=full_paths,
                            results=results)
    Console().print(f"Report: {plain(path)}")
    if open_report:
        webbrowser.open(path.resolve().as_uri())


@app.command("results", cls=HelpCommand)
def results_command(
    run_id: int = typer.Argument(..., metavar="RUN", help="A run with production tokenizers."),
    out: str = typer.Option(..., help="Folder for the results (a data file, its page and the "
                                      "run's interactive report), e.g. docs/results/flores."),
    prices: Path = typer.Option(
        None, "--prices", dir_okay=False, help="A price table of your own (TOML, the format of "
        "analyzer's prices.toml)."),
    replace: bool = typer.Option(False, "--replace", help="Replace the results files (index.html, "
                                 "results.json, report.html) that --out already holds."),
    full_paths: bool = typer.Option(False, "--full-paths", help=FULL_PATHS_HELP),
    db: Path = DbOption,
) -> None:
    """Write a results page of a run's production tokenizers: results.json (every premium with
    its interval, each tokenizer's framing, SHA-256 and priced models, the corpus's digest, the
    analyzer's version), index.html (a sortable table, offline) and report.html."""
    from ..external import load_prices
    from ..queries import complete_run
    from ..report.results import write_results

    folder = output_folder(out)
    if prices is not None:
        load_prices(prices)
    database = open_database(db)
    complete_run(database, run_id)
    with writing(folder):
        try:
            written = write_results(database, run_id, folder, prices, replace=replace,
                                    full_paths=full_paths)
        except ValueError as error:
            raise fail(str(error)) from None
    for path in written:
        Console().print(plain(str(path)))


@app.command(cls=HelpCommand)
def runs(db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """List the runs in the database, newest last."""
    from ..store import list_runs, vocabularies
    from .tables import runs_table

    database = open_database(db)
    summaries = list_runs(database)
    if as_json:
        typer.echo(json_text(summaries))
        return
    if not summaries:
        Console().print("No runs yet: analyzer run --vocab 512")
        return
    console = Console()
    measured = {s.id: [v.scope for v in vocabularies(database, s.id) if v.kind.measured]
                for s in summaries}
    console.print(runs_table(summaries, console.width, measured))
    for s in summaries:
        if s.error:
            # A message of lines of its own (a memory refusal) keeps them, each indented.
            first, *rest = s.error.split("\n")
            console.print("\n  ".join([f"run {s.id} {s.status}: {plain(first)}",
                                        *map(plain, rest)]))


@app.command(cls=HelpCommand)
def show(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id (see analyzer runs)."),
    size: int = typer.Option(None, help="Only this size."),
    vocab: str = typer.Option(SHARED_SCOPE, help="shared, or a language's own vocabulary."),
    pretokenizer: str = typer.Option(None, help="Only this pre-tokenizer's vocabularies "
                                                "(default: a table for each)."),
    output: ShowFormat = FormatOption,
    intervals: bool = IntervalsOption,
    reference: str = ReferenceOption,
    bill: str = BillOption,
    mix: str = MixOption,
    counted_by: str = CountedByOption,
    requests: str = RequestsOption,
    as_json: bool = JsonOption,
    db: Path = DbOption,
) -> None:
    """Show a run's results: each language's tokens against the pivot's (its premium), under
    every vocabulary and tokenizer of the run; with --bill, what a month's workload costs on
    each priced model."""
    from ..external import load_prices
    from ..metrics.bill import workload_of
    from .shown import run_results, show_run

    if bill is None and (mix or counted_by or requests):
        raise fail("--mix, --counted-by and --requests describe the workload of --bill TOKENS")
    database = open_database(db)
    results = run_results(database, run_id, reference)
    workload = None if bill is None else workload_of(results.data, load_prices(), bill, mix,
                                                     counted_by, requests)
    show_run(database, run_id, output=output_format(output, as_json), vocab=vocab, size=size,
             pretokenizer=pretokenizer, intervals=intervals, results=results, workload=workload)


@app.command(cls=HelpCommand)
def merges(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id."),
    vocab: str = typer.Option(SHARED_SCOPE, help="shared, parity, or a language code."),
    pretokenizer: str = typer.Option(None, help="The vocabulary's pre-tokenizer (default: the "
                                                "run's first)."),
    top: int = typer.Option(20, help="How many merges, from the first."),
    by_language: bool = typer.Option(
        False, "--by-language", help="Who got the vocabulary: each language's share of the "
        "merges, of the replaced occurrences and of the training bytes, and its first merge; "
        "and for each merge listed, the language it served most."),
    as_bytes: bool = typer.Option(False, "--bytes", help="Each token as its bytes (b'\\xe0...'), "
                                  "not as the text it stands for."),
    db: Path = DbOption,
) -> None:
    """List a vocabulary's first merges: which bytes became which token, and how often."""
    from ..queries import extension_base_bytes, merge_parts, trained_merges
    from .shown import run_results
    from .tables import attribution_table, served_most

    if top < 0:
        raise fail(f"--top must be 0 or more, not {top}")
    database = open_database(db)
    rows, pretokenizer = trained_merges(database, run_id, vocab, pretokenizer)
    part = merge_parts(rows, extension_base_bytes(database, run_id, vocab)  # its base's ids
                       if pretokenizer == BASE_PRETOKENIZER else None)
    served: dict[str, list[int]] = {}
    chosen: list[str | None] = []
    if by_language:
        results = run_results(database, run_id)
        data = results.data
        assert data.fairness is not None
        if not data.kind(vocab, pretokenizer).trained_on_every_language:
            raise fail(f"--by-language is for the vocabularies trained on every language "
                        f"(shared, parity, superbpe@T); {vocab} is one language's own")
        served = data.fairness.trained.get((vocab, pretokenizer), {})
        chosen = data.fairness.chosen.get((vocab, pretokenizer), [])
        shares = results["attribution"]
        shares = shares[(shares["vocab"] == vocab) & (shares["pretokenizer"] == pretokenizer)]
        Console().print(attribution_table(shares, vocab), "")  # a blank line closes the table
    def shown(piece: bytes | None) -> str:
        return repr(piece) if as_bytes or piece is None else readable(piece)

    width = len(str(min(top, len(rows))))
    partial = False
    for rank, merge in enumerate(rows[:top], start=1):
        line = (f"merge {rank:>{max(width, 3)}}: {shown(part(merge.left))} + "
                f"{shown(part(merge.right))} -> {shown(merge.token)}  "
                f"({merge.pair_count:,} times)")
        partial = partial or "‹" in line
        if served:
            line += f"; {served_most(served, rank - 1, chosen)}"
        typer.echo(line)
    if partial and not as_bytes:
        typer.echo(f"{PARTIAL_KEY} (--bytes: all as bytes)")
    if not rows:
        typer.echo(f"{plain(vocab)}: no merges learned")


@app.command(cls=HelpCommand)
def tokenize(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id."),
    text: str = typer.Argument(..., metavar="TEXT", help="The text to tokenize."),
    vocab: str = typer.Option(SHARED_SCOPE, help="shared, a language code, unigram or "
                              "wordpiece (unigram:LANG for a language's own), or an "
                              "extension (extend:o200k_base)."),
    size: str = typer.Option(None, help="Vocabulary size (default: the run's largest); for an "
                             "extension, +N: N tokens added to the base."),
    pretokenizer: str = typer.Option(None, help="The vocabulary's pre-tokenizer (default: the "
                                                "run's first)."),
    db: Path = DbOption,
) -> None:
    """Tokenize a text with a run's vocabulary: the pieces, their ids and the count."""
    from ..queries import trained_vocabulary
    from .tables import new_table

    database = open_database(db)
    found = trained_vocabulary(database, run_id, vocab, vocabulary_size(database, run_id, vocab, size),
                               pretokenizer)
    text = typed_text(text)
    pieces = found.pieces(text)
    table = new_table("#", "id", "bytes", "text")
    for index, (token, piece) in enumerate(pieces):
        table.add_row(str(index), str(token), plain(repr(piece)), plain(readable(piece)))
    console = Console()
    console.print(table)
    console.print(f"{len(pieces)} tokens for {len(text.encode('utf-8', errors='surrogateescape'))} "
                  f"bytes ({plain(vocab)} vocabulary, size {found.size})")


@app.command(cls=HelpCommand)
def export(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id."),
    format: ExportFormat = typer.Option("json", "--format",
                                        help="json (everything) or csv (the records)."),
    out: Path = typer.Option(None, help="File to write (default: standard output); with "
                             "--tokenizer, the folder to write into."),
    tokenizer: str = typer.Option(
        None, "--tokenizer", metavar="VOCAB", help="Write a tokenizer of the run as files its "
        "library loads, checked by loading them with that library and counting every measured "
        "unit: extend:NAME, an extended production tokenizer in its base's own format (a "
        ".tiktoken rank file and its settings, or a tokenizer.json); unigram, wordpiece or "
        "unigram:LANG, the tokenizer.json the run trained and stored."),
    size: str = typer.Option(None, help="With --tokenizer: +N, the tokens added to an extension "
                             "(default: all the run trained); a Unigram or WordPiece size "
                             "(default: its largest)."),
    pretokenizer: str = typer.Option(None, help="With --tokenizer unigram or wordpiece: the "
                                     "vocabulary's pre-tokenizer (default: the run's first)."),
    units: bool = typer.Option(False, "--units", help="Also each measured unit's count under "
                               "every vocabulary and size (json: a `units` section; csv: one "
                               "row per unit instead of the records, for pandas or DuckDB)."),
    replace: bool = typer.Option(False, "--replace", help="Replace the file --out names, if it "
                                 "is there."),
    full_paths: bool = typer.Option(False, "--full-paths", help="Name the tokenizers' files "
                                    "with their folders on this machine (default: by name and "
                                    "SHA-256 only, so the export can be published)."),
    reference: str = ReferenceOption,
    bill: str = BillOption,
    mix: str = MixOption,
    counted_by: str = CountedByOption,
    requests: str = RequestsOption,
    db: Path = DbOption,
) -> None:
    """Export a run: settings, vocabularies, merges, metrics records and the token report; or,
    with --tokenizer, one of its tokenizers as files its library loads. Written as it is made,
    a vocabulary at a time."""
    from ..export import export_csv, export_json, export_tokenizer, unit_counts_csv
    from ..external import load_prices
    from ..metrics.bill import workload_of
    from .shown import run_results

    if (units or reference or bill) and tokenizer is not None:
        raise fail("--units, --reference and --bill are for the run's export, not for "
                   "--tokenizer VOCAB")
    if bill is None and (mix or counted_by or requests):
        raise fail("--mix, --counted-by and --requests describe the workload of --bill TOKENS")
    if tokenizer is not None:
        if out is None:
            raise fail("--tokenizer writes files: say into which folder with --out DIR")
        database = open_database(db)
        written = export_tokenizer(database, run_id, tokenizer,
                                   vocabulary_size(database, run_id, tokenizer, size), out,
                                   pretokenizer)
        for path in written.files:
            typer.echo(plain(path))
        Console(stderr=True).print(
            f"Wrote {plain(written.name)} ({written.size:,} ids) into {plain(out)}; loaded back "
            f"with its library, it gives the run's count on all {written.checked_units:,} "
            "measured units.")
        return
    if size is not None or pretokenizer is not None:
        raise fail("--size and --pretokenizer are for --tokenizer VOCAB")
    if out is not None:
        check_output_file(out, replace=replace)
    database = open_database(db)
    results = run_results(database, run_id, reference)
    content: str | Iterator[str]
    if format.value == "csv":
        if bill is not None:
            raise fail("--bill is written in the JSON export (--format json)")
        content = unit_counts_csv(results.data) if units else export_csv(results)
    else:
        workload = None if bill is None else workload_of(results.data, load_prices(), bill, mix,
                                                         counted_by, requests)
        content = export_json(database, run_id, results, units=units, full_paths=full_paths,
                              workload=workload)
    emit(content, out)


def vocabulary_size(database: AnalyzerDatabase, run_id: int, vocab: str,
                     value: str | None) -> int | None:
    """A --size as the library takes it: a whole number, or +N for an extension (its base's
    size plus N)."""
    from ..store import vocabularies

    if value is None:
        return None
    text = value.strip()
    try:
        number = int(text.lstrip("+"))
    except ValueError:
        raise fail(f"--size {value!r} is not a whole number (or +N for an extension)") from None
    if not text.startswith("+"):
        return number
    stored = next((v for v in vocabularies(database, run_id) if v.scope == vocab), None)
    if stored is None or stored.base_size is None:
        raise fail(f"--size {text}: +N counts tokens added to an extension (--vocab "
                    f"extend:NAME); {vocab} is not one")
    return stored.base_size + number
