"""Runs: `run` and `recover`."""

from __future__ import annotations

import webbrowser
from pathlib import Path

import typer
from rich.progress import Progress

from ..report import DEFAULT_OUT, write_report
from ..runs import execute_run
from ..settings import RunSettings
from ..store import (
    DB_ENV,
    DEFAULT_DB,
    recover_run,
)
from .app import EXIT_INTERRUPTED, Console, app, open_database, writing
from .formats import plain
from .help import HelpCommand
from .options import RUN_PANELS, DbOption, Executor, TieBreak, setting_option
from .parsing import (
    check_output_folder,
    parse_bytes,
    parse_sizes,
    parse_vocab,
    parse_weights,
    split_commas,
    tokenizer_specs,
)
from .progress import VocabularyBars
from .shown import show_run


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
    sizes, added = parse_vocab(vocab or [], bool(extend))
    settings = RunSettings(
        sizes=sizes, corpus=corpus, tokenizers=tokenizer_specs(tokenizer), counts=counts or [],
        languages=[code for code in langs.split(",") if code.strip()] if langs is not None else None,
        pivot=pivot, per_language=per_language, cross=cross, holdout=holdout, seed=seed,
        tie_break=tie_break.value, min_pair_count=min_pair_count, jobs=jobs,
        pretokenizers=split_commas(pretokenize) or ["none"],
        parity=parity, global_merges=global_merges, weights=parse_weights(weight),
        superbpe=parse_sizes(superbpe or [], "--superbpe"),
        extend=split_commas(extend), added=added, target=target,
        extend_langs=[code for code in extend_langs.split(",") if code.strip()]
        if extend_langs is not None else None,
        algorithms=split_commas(algorithm) or ["bpe"],
        executor=(executor.value if executor else "dask" if scheduler else "local"),
        scheduler=scheduler or None,
        train_on=train_on, train_bytes=parse_bytes(train_bytes, "--train-bytes"), mix=mix,
        skip_invalid=skip_invalid, chunk_cache=chunk_cache, count=count,
        special_tokens=special_tokens,
    )
    if report:
        check_output_folder(out)
    database = open_database(db)
    console = Console(stderr=True)
    recorded: list[int] = []  # the run's id, once it is recorded
    try:
        with Progress(*Progress.get_default_columns(), console=console, transient=True) as bars:
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
    results = show_run(database, run_id, as_json=as_json)
    if report:
        with console.status("Writing the report"), writing(out):
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
    database = open_database(db)
    run_id = recover_run(database, file)
    Console().print(f"Stored the results of run {run_id}; {plain(file)} can be deleted.")
