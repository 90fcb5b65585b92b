"""Runs: `run` and `recover`."""

from __future__ import annotations

import contextlib
import inspect
import typing
import webbrowser
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from ..errors import Invalid
from ..report.files import DEFAULT_OUT
from ..settings import RunSettings
from ..store import DB_ENV, DEFAULT_DB
from .app import EXIT_INTERRUPTED, Console, app, open_database, out_of_memory, writing
from .formats import plain
from .help import HelpCommand
from .options import (
    RUN_PANELS,
    DbOption,
    Executor,
    FormatOption,
    IntervalsOption,
    ShowFormat,
    TieBreak,
    database_path,
    setting_option,
)
from .parsing import (
    check_output_folder,
    output_format,
    parse_bytes,
    parse_sizes,
    parse_vocab,
    parse_weights,
    split_commas,
    tokenizer_specs,
)


class RunCommand(HelpCommand):
    panel_order = (*RUN_PANELS, "Output")


def comma_list(value: str | None) -> list[str] | None:
    """`--langs eng_Latn,rus_Cyrl`: the codes (None when not given)."""
    return [code for code in value.split(",") if code.strip()] if value is not None else None


@dataclass(frozen=True)
class RunOption:
    """One of `run`'s options: the `RunSettings` field it sets, its flags, its type as typed,
    and how what is typed becomes the setting (`read`: the value itself by default). `read`
    also sees every option as typed (`typed`), for a setting two options decide. A value read
    as None is left to the setting's own default."""

    setting: str
    flags: tuple[str, ...]
    typed: Any = str
    read: Callable[[Any, dict[str, Any]], Any] | None = None
    metavar: str | None = None
    more: str = ""
    default: Any = ...
    """The command line's default, where its form differs from the setting's (a list: None)."""
    extra: tuple[tuple[str, Any], ...] = ()

    def option(self) -> Any:
        return setting_option(self.setting, *self.flags, default=self.default, more=self.more,
                              **({"metavar": self.metavar} if self.metavar else {}),
                              **dict(self.extra))


def _sizes(value: list[str] | None, typed: dict[str, Any]) -> tuple[list[int], list[int]]:
    return parse_vocab(value or [], bool(typed["extend"]))


RUN_OPTIONS = [
    RunOption("sizes", ("--vocab", "-v"), list[str], lambda v, typed: _sizes(v, typed)[0],
              "SIZES", "Repeat, or give a comma list: 256,512,32k (32,000) or 32Ki (32,768). "
              "With --extend, +N is N tokens added to the base: --vocab +1024,+8192.",
              default=None),
    RunOption("tokenizers", ("--tokenizer", "-t"), list[str], lambda v, _: tokenizer_specs(v),
              "NAME", "Repeatable. Needs analyzer[tokenizers]; analyzer tokenizers lists the "
              "catalog.", default=None),
    RunOption("counts", ("--counts",), list[str], lambda v, _: v or [], "NAME=FILE", "Repeatable.",
              default=None),
    RunOption("corpus", ("--corpus",)),
    RunOption("languages", ("--langs",), str, lambda v, _: comma_list(v)),
    RunOption("pivot", ("--pivot",)),
    RunOption("per_language", ("--per-language/--no-per-language",), bool),
    RunOption("cross", ("--cross/--no-cross",), bool),
    RunOption("holdout", ("--holdout",), float),
    RunOption("seed", ("--seed",), int),
    RunOption("tie_break", ("--tie-break",), TieBreak, lambda v, _: v.value if v else None),
    RunOption("min_pair_count", ("--min-pair-count",), int),
    RunOption("pretokenizers", ("--pretokenize",), list[str], lambda v, _: split_commas(v) or None,
              "NAMES", "Repeat, or give a comma list (default: none).", default=None),
    RunOption("parity", ("--parity",), bool),
    RunOption("global_merges", ("--global-merges",), int, metavar="M"),
    RunOption("superbpe", ("--superbpe",), list[str],
              lambda v, _: parse_sizes(v or [], "--superbpe"), "T",
              "Repeat, or give a comma list, e.g. --superbpe 16384,26214.", default=None),
    RunOption("extend", ("--extend",), list[str], lambda v, _: split_commas(v), "NAME",
              "Repeatable; the tokens to add are --vocab +N. analyzer export RUN --tokenizer "
              "extend:NAME writes the result.", default=None),
    RunOption("extend_langs", ("--extend-langs",), str, lambda v, _: comma_list(v), "LANGS"),
    RunOption("target", ("--target",), float, metavar="P"),
    RunOption("algorithms", ("--algorithm",), list[str],
              lambda v, _: split_commas(v) if v else None,  # given but empty: refused, not bpe
              "NAME",
              "Repeat, or give a comma list, e.g. --algorithm bpe,unigram (default: bpe).",
              default=None),
    RunOption("weights", ("--weight",), list[str], lambda v, _: parse_weights(v), "LANG=N",
              "Repeatable, e.g. --weight eng_Latn=20.", default=None),
    RunOption("jobs", ("--jobs",), int),
    RunOption("executor", ("--executor",), Executor,
              lambda v, typed: v.value if v else "dask" if typed["scheduler"] else None,
              default=None),
    RunOption("scheduler", ("--scheduler",), str, lambda v, _: v or None, "tcp://HOST:PORT",
              "Implies --executor dask.",
              extra=(("envvar", "ANALYZER_DASK_SCHEDULER"), ("show_envvar", True))),
    RunOption("train_on", ("--train-on",), metavar="SOURCE"),
    RunOption("train_bytes", ("--train-bytes",), str,
              lambda v, _: parse_bytes(v, "--train-bytes"), "BYTES",
              default=None),
    RunOption("min_chunk_count", ("--min-chunk-count",), int, metavar="K"),
    RunOption("mix", ("--mix",), metavar="MIX"),
    RunOption("skip_invalid", ("--skip-invalid",), bool),
    RunOption("chunk_cache", ("--cache/--no-cache",), bool),
    RunOption("count", ("--count",), metavar="units|joined"),
    RunOption("special_tokens", ("--special-tokens/--no-special-tokens",), bool),
]
"""`run`'s options, one row per setting, in the order `run --help` lists them in each panel."""


def run_settings(typed: dict[str, Any]) -> RunSettings:
    """The run's settings from `run`'s options as typed (`RUN_OPTIONS`); each setting not
    given is the definition's default (RunSettings' own)."""
    values: dict[str, Any] = {}
    for row in RUN_OPTIONS:
        value = typed[row.setting]
        values[row.setting] = row.read(value, typed) if row.read else value
    values["added"] = _sizes(typed["sizes"], typed)[1]
    return RunSettings(**{name: value for name, value in values.items() if value is not None})


def with_run_options(function: Callable) -> Callable:
    """`function` with a keyword parameter per row of `RUN_OPTIONS` before its own, which it
    receives as `**typed`: how Typer sees `run`'s options."""
    own = inspect.signature(function, eval_str=True)
    rows = [inspect.Parameter(row.setting, inspect.Parameter.KEYWORD_ONLY, default=row.option(),
                              annotation=row.typed) for row in RUN_OPTIONS]
    mine = [parameter for parameter in own.parameters.values()
            if parameter.kind != inspect.Parameter.VAR_KEYWORD]
    function.__signature__ = own.replace(parameters=rows + mine)  # type: ignore[attr-defined]
    function.__annotations__ = {**{row.setting: row.typed for row in RUN_OPTIONS},
                                **typing.get_type_hints(function)}
    return function


@app.command(cls=RunCommand)
@with_run_options
def run(
    *,
    report: bool = typer.Option(True, help="Write the HTML report (reports/run-<id>.html).",
                                rich_help_panel="Output"),
    open_report: bool = typer.Option(False, "--open", help="Open the report in a browser.",
                                     rich_help_panel="Output"),
    out: Path = typer.Option(DEFAULT_OUT, help="Folder for the report.", rich_help_panel="Output"),
    output: ShowFormat = typer.Option("table", "--format", help=FormatOption.help,
                                      rich_help_panel="Output"),
    intervals: bool = typer.Option(False, "--intervals", help=IntervalsOption.help,
                                   rich_help_panel="Output"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table (as "
                                 "--format json).", rich_help_panel="Output"),
    db: Path = typer.Option(DEFAULT_DB, "--db", envvar=DB_ENV, help="The SQLite database file.",
                            parser=database_path, metavar="FILE", rich_help_panel="Output"),
    **typed: Any,
) -> None:
    """Train shared and per-language vocabularies, count every unit at every size, store it,
    and write the report."""
    from ..runs import execute_run
    from .progress import VocabularyBars, progress_bars
    from .shown import show_run

    shown = output_format(output, as_json)  # before any work: conflicting options are said now
    settings = run_settings(typed)
    if report:
        check_output_folder(out)
    database = open_database(db)
    console = Console(stderr=True)
    recorded: list[int] = []  # the run's id, once it is recorded
    try:
        with progress_bars(console) as bars:
            tracker = VocabularyBars(bars, plain_lines=not console.is_terminal)
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
    with stored_when_memory_runs_out(run_id, "show"):
        results = show_run(database, run_id, output=shown, intervals=intervals)
    if report:
        from ..report import write_report  # Plotly only for a run that writes its report

        with console.status("Writing the report"), writing(out), \
                stored_when_memory_runs_out(run_id, "report"):
            path = write_report(database, run_id, out, results=results)
        console.print(f"Report: {plain(path)}")
        if open_report:
            webbrowser.open(path.resolve().as_uri())


@contextlib.contextmanager
def stored_when_memory_runs_out(run_id: int, command: str) -> Iterator[None]:
    """Memory that runs out once the run is stored (its tables, its report), said with what
    holds: the run is stored, and `analyzer COMMAND RUN` gives the rest later (before: "The
    command ran out of memory", exit 1, after a run that had completed)."""
    try:
        yield
    except Exception as error:  # MemoryError, a thread or a mapping refused
        said = out_of_memory(error)
        if said is None:
            raise
        raise Invalid(f"Run {run_id} is stored. {said} Then: analyzer {command} {run_id}") \
            from None


@app.command(cls=HelpCommand)
def recover(
    file: Path = typer.Argument(..., metavar="FILE",
                                help="A pending-results file that a run could not store."),
    db: Path = DbOption,
) -> None:
    """Store the results of a run that finished while the database was locked."""
    from ..store import recover_run

    database = open_database(db)
    run_id = recover_run(database, file)
    Console().print(f"Stored the results of run {run_id}; {plain(file)} can be deleted.")
