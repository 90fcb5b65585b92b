"""Corpora: `ingest`, `corpora`, `corpus`."""

from __future__ import annotations

from pathlib import Path

import typer

from ..corpus import (
    DEFAULT_UNPACK_LIMIT,
    SAMPLE_CORPUS,
    default_name,
    read_corpus,
)
from ..export import corpus_texts_csv
from ..store import (
    get_corpus,
    list_corpora,
    open_db,
    save_corpus,
)
from .app import Console, app, emit, fail, open_database
from .formats import json_text, plain
from .help import HelpCommand
from .options import DbOption, FloresSplit, Format, JsonOption, Units
from .parsing import check_output_file
from .tables import languages_table, new_table


@app.command(cls=HelpCommand)
def ingest(
    path: Path = typer.Argument(None, metavar="PATH", help="Corpus folder or file, or hf:ORG/NAME[@REVISION] "
                                "(a dataset on the Hugging Face hub, e.g. "
                                "hf:openlanguagedata/flores_plus; needs analyzer[tokenizers], "
                                "which brings huggingface_hub); default: the shipped sample."),
    name: str = typer.Option(None, help="Name to store it under; default: the folder or file name."),
    format: Format = typer.Option(None, "--format", help="Input format; default: detected."),
    units: Units = typer.Option("lines", help="Folder format: a unit per line, or per "
                                                  "blank-line-separated paragraph."),
    nfc: bool = typer.Option(False, "--nfc", help="Normalise texts to Unicode NFC."),
    skip_empty_units: bool = typer.Option(False, help="Drop units empty in any language."),
    split: FloresSplit = typer.Option(None, "--split", help="FLORES-200's or FLORES+'s layout "
                                      "(dev/ and devtest/ folders, or hf:openlanguagedata/"
                                      "flores_plus): the split to ingest (default: devtest); each "
                                      "unit keeps its FLORES id, e.g. devtest:17."),
    replace: bool = typer.Option(False, "--replace", help="Replace a corpus of the same name."),
    max_corpus_bytes: int = typer.Option(DEFAULT_UNPACK_LIMIT, min=1, help="A zip archive may unpack to "
                                         "at most this many bytes (a small zip can hold "
                                         "gigabytes); a larger one is refused."),
    db: Path = DbOption,
) -> None:
    """Read a parallel corpus, check it, and store it in the database."""
    path = path or SAMPLE_CORPUS
    console = Console(stderr=True)
    with console.status(f"Reading {plain(path)}"):
        corpus = read_corpus(path, format=format.value if format else None, units=units.value,
                             nfc=nfc, skip_empty_units=skip_empty_units,
                             split=split.value if split else None, unpack_limit=max_corpus_bytes)
    name = name if name is not None else default_name(path, corpus)
    database = open_db(db, create=True)
    with console.status(f"Storing {corpus.n_units:,} units x {len(corpus.languages)} languages"):
        status = save_corpus(database, corpus, name, replace=replace)
    summary = get_corpus(database, name)
    out = Console()
    if status == "unchanged":
        out.print(f"Corpus {plain(repr(name))} is already ingested with this content; nothing to do.")
    else:
        out.print(f"{status.capitalize()} corpus {plain(repr(name))} from {plain(path)} "
                  f"({corpus.format}): {len(corpus.languages)} languages x {corpus.n_units:,} units "
                  f"in {plain(db)}")
    if corpus.dropped_empty_units:
        out.print(f"Dropped {corpus.dropped_empty_units} unit(s) that were empty in some language.")
    if corpus.not_read:
        shown = ", ".join(corpus.not_read[:10]) + (", ..." if len(corpus.not_read) > 10 else "")
        out.print(f"Not read (not <lang>.txt): {plain(shown)}")
    if nfc:
        out.print(f"NFC normalisation changed {corpus.nfc_changed_units} unit(s).")
    for note in corpus.notes:
        out.print(f"Note: {plain(note)}")
    out.print(languages_table(summary))


@app.command(cls=HelpCommand)
def corpora(db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """List the corpora in the database."""
    database = open_database(db)
    summaries = list_corpora(database)
    if as_json:
        typer.echo(json_text(summaries))
        return
    if not summaries:
        Console().print("No corpora yet: analyzer ingest PATH (or with no PATH, the sample).")
        return
    table = new_table("name", "languages", "units", "bytes", "format", "ingested (UTC)")
    for s in summaries:  # no path in a table: analyzer corpus NAME says where each came from
        table.add_row(plain(s.name), str(len(s.languages)), f"{s.units:,}", f"{s.bytes:,}",
                      s.format, s.created.replace("T", " ")[:16])
    console = Console()
    console.print(table)
    console.print("Where each came from, and its languages: analyzer corpus NAME")


@app.command(cls=HelpCommand)
def corpus(name: str = typer.Argument(..., metavar="NAME", help="The corpus name."), db: Path = DbOption,
           as_json: bool = JsonOption,
           texts: bool = typer.Option(
               False, "--texts", help="Write every text instead, as CSV (unit, lang, text; unit "
               "the index from 0 that export --units and run --counts use): what to send to a "
               "provider's count-tokens endpoint."),
           out: Path = typer.Option(None, help="With --texts: the file to write (default: "
                                    "standard output)."),
           replace: bool = typer.Option(False, "--replace", help="Replace the file --out "
                                        "names, if it is there.")) -> None:
    """Show one corpus: its source and every language's size; or, with --texts, its texts."""
    if out is not None and not texts:
        raise fail("--out is for --texts")
    if out is not None:
        check_output_file(out, replace=replace)
    database = open_database(db)
    summary = get_corpus(database, name)
    if texts:
        emit(corpus_texts_csv(database, summary), out)
        return
    if as_json:
        typer.echo(json_text(summary))
        return
    c = summary
    Console().print(f"{plain(c.name)}: {len(c.languages)} languages x {c.units:,} units, "
                    f"{c.bytes:,} bytes; {c.format} from {plain(c.source)}; "
                    f"{'NFC-normalised' if c.nfc else 'texts as given'}; ingested {c.created}")
    Console().print(languages_table(summary))
