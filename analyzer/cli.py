"""The `analyzer` command: a thin Typer layer over the library."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from . import __version__, bpe
from .corpus import FORMATS, CorpusError, read_corpus
from .store import DB_ENV, DEFAULT_DB, StoreError, get_corpus, list_corpora, open_db, save_corpus
from .store.corpora import CorpusSummary

SAMPLE_CORPUS = Path(__file__).resolve().parents[1] / "parallel_corpora" / "harbour_town"

app = typer.Typer(
    help="Measure the tokenization tax: how many more tokens each language pays for the same meaning.",
    no_args_is_help=True,
    add_completion=False,
)


Format = Enum("Format", {name: name for name in FORMATS}, type=str)


class Units(str, Enum):
    lines = "lines"
    paragraphs = "paragraphs"


DbOption = typer.Option(DEFAULT_DB, "--db", envvar=DB_ENV, help="The SQLite database file.",
                        dir_okay=False)
JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table (see README).")


class TieBreak(str, Enum):
    lexicographic = "lexicographic"
    first = "first"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"analyzer {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", help="Show the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Measure the tokenization tax: how many more tokens each language pays for the same meaning."""


@app.command()
def train(
    files: list[Path] = typer.Argument(..., help="Text files; each line is one text.", exists=True,
                                       dir_okay=False, readable=True),
    vocab: int = typer.Option(512, "--vocab", "-v", help="Vocabulary size: 256 bytes + merges."),
    min_pair_count: int = typer.Option(2, help="Stop when the best pair occurs fewer times."),
    tie_break: TieBreak = typer.Option(TieBreak.lexicographic, help="How equal counts are ordered."),
    show: int = typer.Option(10, help="How many of the first merges to list."),
    as_json: bool = typer.Option(False, "--json", help="Print the merge list as JSON."),
) -> None:
    """Learn byte-level BPE merges on text files and show what they do to the text."""
    per_file = [_read_lines(path) for path in files]
    texts = [line for lines in per_file for line in lines]
    if vocab < 256:
        raise _fail(f"--vocab {vocab} is below 256, the byte alphabet")
    with Progress(*Progress.get_default_columns(), console=Console(stderr=True),
                  transient=True, disable=as_json) as bar:
        task = bar.add_task("training", total=vocab - 256)
        training = bpe.train_detailed(
            texts, vocab, min_pair_count=min_pair_count, tie_break=tie_break.value,
            progress=lambda done, total: bar.update(task, completed=done),
        )
    vocabulary = bpe.Vocabulary(training.merges)
    if as_json:
        merges = [{"rank": rank, "left": left, "right": right, "id": new_id,
                   "count": training.counts[rank],
                   "token": vocabulary.token_bytes(new_id).decode("utf-8", errors="backslashreplace")}
                  for rank, ((left, right), new_id) in enumerate(training.merges)]
        typer.echo(json.dumps({"vocab_size": vocabulary.size, "stop_reason": training.stop_reason,
                               "merges": merges}, ensure_ascii=False, indent=2))
        return
    tokens = training.tokens_after(len(training.merges))
    console = Console()
    console.print(f"{len(texts)} texts, {training.n_bytes:,} bytes -> {tokens:,} tokens "
                  f"({training.n_bytes / max(tokens, 1):.2f} bytes per token) "
                  f"with {len(training.merges):,} merges")
    if training.stop_reason == "min_pair_count":
        console.print(f"[yellow]Stopped early at size {vocabulary.size}: no pair occurs "
                      f"{min_pair_count} times or more.[/yellow]")
    if len(files) > 1:
        counts = vocabulary.count_tokens(texts, [vocabulary.size])[vocabulary.size]
        table = Table("file", "bytes", "tokens", "bytes/token", f"tokens vs {files[0].name}",
                      title=f"Tokens per file under the shared vocabulary (size {vocabulary.size})")
        first_tokens, offset = None, 0
        for path, lines in zip(files, per_file):
            n_bytes = sum(len(line.encode("utf-8")) for line in lines)
            n_tokens = sum(counts[offset:offset + len(lines)])
            offset += len(lines)
            first_tokens = first_tokens or n_tokens
            table.add_row(escape(path.name), f"{n_bytes:,}", f"{n_tokens:,}",
                          f"{n_bytes / max(n_tokens, 1):.2f}", f"{n_tokens / max(first_tokens, 1):.2f}x")
        console.print(table)
    table = Table("rank", "id", "token", "count", title="First merges")
    for rank, (_, new_id) in enumerate(training.merges[:show]):
        token = vocabulary.token_bytes(new_id).decode("utf-8", errors="backslashreplace")
        table.add_row(str(rank), str(new_id), escape(f"'{token}'"), f"{training.counts[rank]:,}")
    if show > 0 and training.merges:
        console.print(table)


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise _fail(f"{path}: not UTF-8 text (byte offset {error.start})") from None


def _fail(message: str) -> typer.Exit:
    # soft_wrap: an error names paths and values; wrapping would cut them in two.
    Console(stderr=True, soft_wrap=True).print(f"[red]Error:[/red] {escape(message)}")
    return typer.Exit(code=1)


@app.command()
def ingest(
    path: Path = typer.Argument(None, help="Corpus folder or file; default: the shipped sample."),
    name: str = typer.Option(None, help="Name to store it under; default: the folder or file name."),
    format: Format = typer.Option(None, "--format", help="Input format; default: detected."),
    units: Units = typer.Option(Units.lines, help="Folder format: a unit per line, or per "
                                                  "blank-line-separated paragraph."),
    nfc: bool = typer.Option(False, "--nfc", help="Normalise texts to Unicode NFC."),
    skip_empty_units: bool = typer.Option(False, help="Drop units empty in any language."),
    replace: bool = typer.Option(False, "--replace", help="Replace a corpus of the same name."),
    db: Path = DbOption,
) -> None:
    """Read a parallel corpus, check it, and store it in the database."""
    path = path or SAMPLE_CORPUS
    console = Console(stderr=True)
    try:
        with console.status(f"Reading {path}"):
            corpus = read_corpus(path, format=format.value if format else None, units=units.value,
                                 nfc=nfc, skip_empty_units=skip_empty_units)
        name = name or _default_name(path)
        database = open_db(db)
        with console.status(f"Storing {corpus.n_units:,} units x {len(corpus.languages)} languages"):
            status = save_corpus(database, corpus, name, replace=replace)
        summary = get_corpus(database, name)
    except (CorpusError, StoreError, FileNotFoundError) as error:
        raise _fail(str(error)) from None
    out = Console()
    if status == "unchanged":
        out.print(f"Corpus {escape(name)!r} is already ingested with this content; nothing to do.")
    else:
        out.print(f"{status.capitalize()} corpus {escape(name)!r} from {escape(str(path))} "
                  f"({corpus.format}): {len(corpus.languages)} languages x {corpus.n_units:,} units "
                  f"in {escape(str(db))}")
    if corpus.dropped_empty_units:
        out.print(f"Dropped {corpus.dropped_empty_units} unit(s) that were empty in some language.")
    if nfc:
        out.print(f"NFC normalisation changed {corpus.nfc_changed_units} unit(s).")
    out.print(_languages_table(summary))


@app.command()
def corpora(db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """List the corpora in the database."""
    summaries = _read(lambda database: list_corpora(database), db)
    if as_json:
        typer.echo(json.dumps([_corpus_json(s, details=False) for s in summaries], indent=2,
                              ensure_ascii=False))
        return
    if not summaries:
        Console().print("No corpora yet: analyzer ingest PATH (or with no PATH, the sample).")
        return
    table = Table("name", "languages", "units", "bytes", "format", "source", "ingested")
    for s in summaries:
        table.add_row(escape(s.corpus.name), str(len(s.languages)), f"{s.corpus.n_units:,}",
                      f"{s.bytes:,}", s.corpus.format, escape(s.corpus.source), s.corpus.created)
    Console().print(table)


@app.command()
def corpus(name: str = typer.Argument(..., help="The corpus name."), db: Path = DbOption,
           as_json: bool = JsonOption) -> None:
    """Show one corpus: its source and every language's size."""
    summary = _read(lambda database: get_corpus(database, name), db)
    if as_json:
        typer.echo(json.dumps(_corpus_json(summary, details=True), indent=2, ensure_ascii=False))
        return
    c = summary.corpus
    Console().print(f"{escape(c.name)}: {len(summary.languages)} languages x {c.n_units:,} units, "
                    f"{summary.bytes:,} bytes; {c.format} from {escape(c.source)}; "
                    f"{'NFC-normalised' if c.nfc else 'texts as given'}; ingested {c.created}")
    Console().print(_languages_table(summary))


def _read(query, db: Path):
    """Run a read against the database, turning store errors into a clean exit."""
    if not db.exists():
        raise _fail(f"{db}: no database here yet; run analyzer ingest first (or pass --db)")
    try:
        return query(open_db(db))
    except StoreError as error:
        raise _fail(str(error)) from None


def _default_name(path: Path) -> str:
    return path.name.split(".")[0] if path.is_file() else path.resolve().name


def _languages_table(summary: CorpusSummary) -> Table:
    table = Table("language", "name", "units", "bytes", "characters", "bytes/char")
    for stats in summary.languages:
        table.add_row(stats.lang, escape(stats.name), f"{stats.units:,}", f"{stats.bytes:,}",
                      f"{stats.chars:,}", f"{stats.bytes_per_char:.2f}")
    return table


def _corpus_json(summary: CorpusSummary, *, details: bool) -> dict:
    c = summary.corpus
    record = {"name": c.name, "source": c.source, "format": c.format, "units": c.n_units,
              "languages": [s.lang for s in summary.languages], "bytes": summary.bytes,
              "content_hash": c.content_hash, "nfc": bool(c.nfc), "created": c.created}
    if details:
        record["language_stats"] = [
            {"lang": s.lang, "name": s.name, "units": s.units, "bytes": s.bytes, "chars": s.chars,
             "bytes_per_char": round(s.bytes_per_char, 4)} for s in summary.languages]
    return record
