"""What the commands share: their common options, the choices the library defines, and how a
library setting is named as a flag."""

from __future__ import annotations

import dataclasses
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from ..bpe import PRETOKENIZERS
from ..bpe.reference import TIE_BREAKS
from ..corpus import (
    FLORES_SPLITS,
    FORMATS,
    UNIT_KINDS,
)
from ..settings import (
    EXECUTORS,
    RunSettings,
    describe_bounds,
    description,
    setting_names,
)
from ..store import (
    DB_ENV,
    DEFAULT_DB,
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
                           "weights", "train_on", "train_bytes", "min_chunk_count", "mix", "skip_invalid",
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
    ranged = describe_bounds(name, for_help=True)
    help = " ".join(part for part in (description(name), f"Allowed: {ranged}." if ranged
                                      else "", more) if part)
    return typer.Option(default, *flags, help=help,
                        rich_help_panel=panel or PANEL_OF.get(name), **options)


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


def database_path(value: str | Path) -> Path:
    """--db's value: a file's path, neither empty (which a Path reads as ".", said "file '' is
    a directory") nor a folder's.

    >>> database_path("a.db")
    PosixPath('a.db')
    >>> database_path("")
    Traceback (most recent call last):
    ...
    typer._click.exceptions.BadParameter: the path is empty; give the database's file (e.g. analyzer.db)
    """
    if str(value) == "":
        raise typer.BadParameter("the path is empty; give the database's file (e.g. analyzer.db)")
    if Path(value).is_dir():
        raise typer.BadParameter(f"file {str(value)!r} is a directory.")
    return Path(value)


DbOption = typer.Option(DEFAULT_DB, "--db", envvar=DB_ENV, help="The SQLite database file.",
                        parser=database_path, metavar="FILE")


JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table (docs/reference/export.md).")


ShowFormat = Enum("ShowFormat", {name: name for name in ("table", "csv", "markdown", "json")},  # type: ignore[misc]
                  type=str)
"""What `show` and `run` print: tables for a terminal; the records as CSV (one row per
vocabulary, pre-tokenizer, size and language: `export --format csv`'s); the tables as
Markdown; the show document as JSON."""

FormatOption = typer.Option(
    "table", "--format", help="table: for a terminal; csv: every record, one row each; "
    "markdown: the tables, for a document; json: the show document (as --json).")
ReferenceOption = typer.Option(
    None, "--reference", metavar="LANG", help="Measure every language against this one of the "
    "run's (a code, e.g. hin_Deva) instead of the run's pivot: premiums, costs, intervals and "
    "notes (the verdicts are the same against any).")
BillOption = typer.Option(
    None, "--bill", metavar="TOKENS", help="Price a month's workload on every model of the price "
    "table whose tokenizer the run measured: TOKENS of reference-language text a month (2.5M), "
    "as --counted-by counts them, shared among languages as --mix says.")
MixOption = typer.Option(
    None, "--mix", metavar="LANG=SHARE,...", help="With --bill: each language's share of the "
    "content (eng_Latn=0.6,hin_Deva=0.4; default: every language of the run alike).")
CountedByOption = typer.Option(
    None, "--counted-by", metavar="TOKENIZER", help="With --bill: the tokenizer that counted "
    "TOKENS (default: the run's first production tokenizer with a price).")
RequestsOption = typer.Option(
    None, "--requests", metavar="N", help="With --bill: requests a month, each paying its "
    "model's chat framing tokens.")
IntervalsOption = typer.Option(False, "--intervals",
                               help="Each premium, cost and Gini with its 95 % interval.")
