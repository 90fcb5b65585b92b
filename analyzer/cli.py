"""The `analyzer` command: a thin Typer layer over the library."""

from __future__ import annotations

import json
import webbrowser
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
from . import cli_views as views
from .metrics import language_metrics, load_run_data
from .report import DEFAULT_OUT, write_report
from .runs import RunError, RunSettings, execute_run
from .store import get_run, list_runs, load_merges, reap_stale_runs, vocabularies

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


@app.command()
def run(
    vocab: list[str] = typer.Option(None, "--vocab", "-v",
                                    help="Vocabulary size(s) to train: repeat, or 256,512,4096."),
    tokenizer: list[str] = typer.Option(
        None, "--tokenizer", "-t", help="Production tokenizer to measure (repeatable): "
        "cl100k_base, o200k_base, gpt2, ...; a .tiktoken file (FILE@cl100k_base); a "
        "tokenizer.json; a SentencePiece .model. Needs analyzer[tokenizers]."),
    corpus: str = typer.Option(None, help="Corpus name; optional when there is only one."),
    langs: str = typer.Option(None, help="Languages, e.g. eng_Latn,rus_Cyrl (default: all)."),
    pivot: str = typer.Option(None, help="Pivot language (default: English if present, "
                                         "else the first)."),
    per_language: bool = typer.Option(True, help="Also train one vocabulary per language."),
    cross: bool = typer.Option(False, help="Every vocabulary counts every language."),
    holdout: float = typer.Option(0.0, help="Share of units held out of training and measured "
                                            "(0: train and measure on all)."),
    seed: int = typer.Option(0, help="Seed for the holdout split and the bootstrap."),
    tie_break: TieBreak = typer.Option(TieBreak.lexicographic, help="How equal counts are ordered."),
    min_pair_count: int = typer.Option(2, help="Stop when the best pair occurs fewer times."),
    jobs: int = typer.Option(None, help="Parallel processes (default: the machine's cores)."),
    report: bool = typer.Option(True, help="Write the HTML report (reports/run-<id>.html)."),
    open_report: bool = typer.Option(False, "--open", help="Open the report in a browser."),
    out: Path = typer.Option(DEFAULT_OUT, help="Folder for the report."),
    as_json: bool = JsonOption,
    db: Path = DbOption,
) -> None:
    """Train shared and per-language vocabularies, count every unit at every size, store it,
    and write the report."""
    settings = RunSettings(
        sizes=_parse_sizes(vocab or []), corpus=corpus, tokenizers=list(tokenizer or []),
        languages=[code for code in langs.split(",") if code.strip()] if langs is not None else None,
        pivot=pivot, per_language=per_language, cross=cross, holdout=holdout, seed=seed,
        tie_break=tie_break.value, min_pair_count=min_pair_count, jobs=jobs,
    )
    if not db.exists():
        raise _fail(f"{db}: no database here yet; run analyzer ingest first (or pass --db)")
    database = open_db(db)
    console = Console(stderr=True)
    try:
        with Progress(*Progress.get_default_columns(), console=console, transient=True) as bars:
            tracker = _VocabularyBars(bars)
            run_id = execute_run(database, settings, tracker.report, tracker.stage)
    except RunError as error:
        raise _fail(str(error)) from None
    except KeyboardInterrupt:
        console.print("Interrupted: the run is marked interrupted and none of its partial "
                      "results were stored.")
        raise typer.Exit(code=130) from None
    _show_run(database, run_id, as_json=as_json)
    if report:
        with console.status("Writing the report"):
            path = write_report(database, run_id, out)
        console.print(f"Report: {escape(str(path))}")
        if open_report:
            webbrowser.open(path.resolve().as_uri())


@app.command("report")
def report_command(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id (see analyzer runs)."),
    out: Path = typer.Option(DEFAULT_OUT, help="Folder for the pages."),
    open_report: bool = typer.Option(False, "--open", help="Open the page in a browser."),
    self_contained: bool = typer.Option(False, help="Inline plotly.js: one file to send."),
    price: float = typer.Option(1.0, help="Price per million tokens, for the cost view."),
    context: int = typer.Option(128_000, help="Context window in tokens, for the cost view."),
    db: Path = DbOption,
) -> None:
    """Write a run's HTML report (and the index of runs); it works offline."""
    database = _read(lambda database: database, db)
    _run_metrics(database, run_id)  # a clear error for a missing or unfinished run
    if price < 0 or context < 1:
        raise _fail("--price must be 0 or more and --context 1 or more")
    path = write_report(database, run_id, out, self_contained=self_contained, price=price,
                        context=context)
    Console().print(f"Report: {escape(str(path))}")
    if open_report:
        webbrowser.open(path.resolve().as_uri())


@app.command()
def runs(db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """List the runs in the database, newest last."""
    summaries = _read(_reaped_runs, db)
    if as_json:
        typer.echo(json.dumps([views.run_list_json(s) for s in summaries], indent=2))
        return
    if not summaries:
        Console().print("No runs yet: analyzer run --vocab 512")
        return
    table = Table("id", "corpus", "status", "languages", "sizes", "pivot", "holdout", "started",
                  "seconds")
    for s in summaries:
        r = s.run
        status = r.status if not r.error else f"{r.status}: {r.error}"
        table.add_row(str(r.id), escape(s.corpus), escape(status), str(len(s.languages)),
                      ",".join(map(str, s.sizes)), r.pivot, f"{r.holdout:g}", r.started,
                      f"{r.seconds:.1f}" if r.seconds is not None else "-")
    Console().print(table)


@app.command()
def show(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id (see analyzer runs)."),
    size: int = typer.Option(None, help="Only this size."),
    vocab: str = typer.Option("shared", help="shared, or a language's own vocabulary."),
    as_json: bool = JsonOption,
    db: Path = DbOption,
) -> None:
    """Show a run's results: tokens and overhead vs the pivot per language and size."""
    database = _read(lambda database: database, db)
    _show_run(database, run_id, as_json=as_json, vocab=vocab, size=size)


@app.command()
def merges(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id."),
    vocab: str = typer.Option("shared", help="shared, or a language code."),
    top: int = typer.Option(20, help="How many merges, from the first."),
    db: Path = DbOption,
) -> None:
    """List a vocabulary's first merges: which bytes became which token, and how often."""
    rows = _read(lambda database: _trained_merges(database, run_id, vocab), db)
    pieces = {byte: bytes([byte]) for byte in range(256)}
    for left, right, new_id, _, token in rows:
        pieces[new_id] = token
    width = len(str(min(top, len(rows))))
    for rank, (left, right, new_id, count, token) in enumerate(rows[:top], start=1):
        typer.echo(f"merge {rank:>{max(width, 3)}}: {pieces[left]!r} + {pieces[right]!r}   "
                   f"-> {token!r}     (occurred {count} times)")
    if not rows:
        typer.echo(f"{vocab}: no merges learned")


@app.command()
def tokenize(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id."),
    text: str = typer.Argument(..., help="The text to tokenize."),
    vocab: str = typer.Option("shared", help="shared, or a language code."),
    size: int = typer.Option(None, help="Vocabulary size (default: the run's largest)."),
    db: Path = DbOption,
) -> None:
    """Tokenize a text with a run's vocabulary: the pieces, their ids and the count."""
    rows = _read(lambda database: _trained_merges(database, run_id, vocab), db)
    largest = 256 + len(rows)
    size = size or largest
    if not 256 <= size <= largest:
        raise _fail(f"--size {size} is outside 256..{largest}, the sizes {vocab} has in run {run_id}")
    vocabulary = bpe.Vocabulary([((l, r), n) for l, r, n, _, _ in rows[: size - 256]])
    try:
        ids = vocabulary.encode(text)
    except ValueError as error:
        raise _fail(str(error)) from None
    table = Table("#", "id", "bytes", "text")
    for index, token in enumerate(ids):
        piece = vocabulary.token_bytes(token)
        table.add_row(str(index), str(token), escape(repr(piece)),
                      escape(piece.decode("utf-8", errors="backslashreplace")))
    console = Console()
    console.print(table)
    console.print(f"{len(ids)} tokens for {len(text.encode('utf-8'))} bytes "
                  f"({vocab} vocabulary, size {vocabulary.size})")


@app.command()
def export(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id."),
    format: str = typer.Option("json", "--format", help="json (everything) or csv (the records)."),
    out: Path = typer.Option(None, help="File to write (default: standard output)."),
    db: Path = DbOption,
) -> None:
    """Export a run: settings, vocabularies, merges, metrics records and the token report."""
    if format not in ("json", "csv"):
        raise _fail(f"--format must be json or csv, not {format!r}")
    database = _read(lambda database: database, db)
    data, frame = _run_metrics(database, run_id)
    if format == "csv":
        content = frame.to_csv(index=False)
    else:
        content = json.dumps(_export_json(database, data, frame), indent=2, ensure_ascii=False)
    if out is None:
        typer.echo(content)
    else:
        out.write_text(content, encoding="utf-8")
        Console(stderr=True).print(f"Wrote {escape(str(out))}")


class _VocabularyBars:
    """Rich progress: one bar per vocabulary while it trains and counts."""

    def __init__(self, bars: Progress):
        self.bars = bars
        self.tasks: dict[str, int] = {}
        self.overall = bars.add_task("vocabularies", total=None)
        self.done = 0

    def stage(self, message: str) -> None:
        self.bars.update(self.overall, description=message)

    def report(self, scope: str, phase: str, done: int, total: int) -> None:
        task = self.tasks.get(scope)
        if task is None:
            task = self.tasks[scope] = self.bars.add_task(scope, total=total)
        if phase == "train":
            self.bars.update(task, description=f"{scope}: training", completed=done, total=total)
        elif phase == "count":
            self.bars.update(task, description=f"{scope}: counting")
        else:
            self.bars.remove_task(task)
            self.done += 1
            self.bars.update(self.overall, description=f"vocabularies done: {self.done}")


def _reaped_runs(database):
    """The runs, after marking those whose process died as interrupted."""
    reap_stale_runs(database)
    return list_runs(database)


def _trained_merges(database, run_id: int, scope: str):
    """The merges of a trained vocabulary; a production tokenizer has none stored."""
    kinds = {v.scope: v.kind for v in vocabularies(database, run_id)}
    if kinds.get(scope) == "production":
        raise StoreError(f"{scope} is a production tokenizer: its merges are not stored; "
                         "merges and tokenize show the run's trained vocabularies")
    return load_merges(database, run_id, scope)


def _parse_sizes(values: list[str]) -> list[int]:
    sizes = []
    for value in values:
        for part in value.split(","):
            if not part.strip():
                continue
            try:
                sizes.append(int(part))
            except ValueError:
                raise _fail(f"--vocab {part.strip()!r} is not a whole number") from None
    return sizes


def _run_metrics(database, run_id: int):
    try:
        run = get_run(database, run_id)
    except StoreError as error:
        raise _fail(str(error)) from None
    if run.run.status != "complete":
        why = f" ({run.run.error})" if run.run.error else ""
        raise _fail(f"run {run_id} is {run.run.status}{why}: it has no results")
    data = load_run_data(database, run_id)
    return data, language_metrics(data)


def _show_run(database, run_id: int, *, as_json: bool, vocab: str = "shared",
              size: int | None = None) -> None:
    data, frame = _run_metrics(database, run_id)
    run = data.run
    if vocab not in set(frame["vocab"]) and not (vocab == "shared" and not run.sizes):
        raise _fail(f"run {run_id} has no vocabulary {vocab!r}; it has: "
                    f"{', '.join(dict.fromkeys(frame['vocab']))}")
    if size is not None and size not in set(frame[frame["vocab"] == vocab]["size"]):
        raise _fail(f"run {run_id} has no size {size}; its sizes: {', '.join(map(str, run.sizes))}")
    if as_json:
        typer.echo(json.dumps(views.run_json(run, frame), indent=2))
        return
    console = Console()
    console.print(views.summary_table(run, frame, vocab, [size] if size else None))
    vocabs = vocabularies(database, run_id)
    for note in views.early_stops(vocabs, run.sizes):
        console.print(f"[yellow]Note:[/yellow] {escape(note)}")
    bad = [v.scope for v in vocabs if v.roundtrip_ok is False]
    if bad:
        console.print(f"[red]Round trip failed[/red] for {', '.join(bad)}: decoding did not "
                      "give the texts back. This is a bug; please report it.")


def _export_json(database, data, frame) -> dict:
    run = data.run
    vocabs = vocabularies(database, run.run.id)
    export = views.run_list_json(run)
    export["engine_version"] = run.run.engine_version
    export["measured_units"] = run.measured_units
    export["vocabularies"] = [
        {"scope": v.scope, "kind": v.kind, "size": v.size, "trained_bytes": v.trained_bytes,
         "merges_learned": v.merges_learned, "stop_reason": v.stop_reason, "seconds": v.seconds,
         "roundtrip_ok": v.roundtrip_ok, "library": v.library, "source": v.source,
         "merges": [{"left": l, "right": r, "id": n, "count": c, "token_hex": t.hex()}
                    for l, r, n, c, t in load_merges(database, run.run.id, v.scope)]}
        for v in vocabs]
    export["records"] = views.records(frame)
    export["token_report"] = views.token_report(run, frame, vocabs)
    return export
