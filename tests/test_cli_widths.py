"""Output that does not depend on the terminal: no command breaks a path, a URL or a name
across lines, whatever the width (COLUMNS unset: rich's 80 columns in a pipe; narrow; wide),
and no test depends on it either (issue 50, items 1 and 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.cells import cell_len

from helpers import TINY, invoke, resolve_or_skip

WIDTHS = [None, "40", "200"]
"""COLUMNS: unset (as on a fresh machine, and in a pipe), narrow, wide."""


def whole(path, output: str) -> bool:
    """Whether `path` appears whole on one line of `output`."""
    return any(str(path) in line for line in output.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_printed_paths_stay_whole_at_any_width(tmp_path, columns):
    resolve_or_skip("cl100k_base")
    deep = tmp_path / ("a-folder-with-a-long-name-" * 6)  # 156 characters, then the files
    corpus = deep / "tiny"
    corpus.mkdir(parents=True)
    for lang, lines in TINY.items():
        (corpus / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = deep / "a.db"
    env = {"COLUMNS": columns, "LINES": None}

    def output(*args: object) -> str:
        result = invoke(db, *args, env=env)
        assert result.exit_code == 0, result.output
        return result.output  # standard output and standard error

    printed = output("ingest", corpus)
    assert whole(corpus, printed) and whole(db, printed), printed
    assert whole(corpus, output("corpus", "tiny"))
    printed = output("run", "--vocab", "300", "--jobs", "1", "--tokenizer", "cl100k_base",
                     "--out", deep / "reports")
    assert whole(deep / "reports" / "run-1.html", printed), printed
    printed = output("report", "1", "--out", deep / "again")
    assert whole(deep / "again" / "run-1.html", printed), printed
    printed = output("results", "1", "--out", deep / "results")
    for name in ("results.json", "index.html", "report.html"):
        assert whole(deep / "results" / name, printed), printed
    printed = output("export", "1", "--out", deep / "records.json")
    assert whole(deep / "records.json", printed), printed
    printed = output("sources", "add", "wiki", corpus / "eng_Latn.txt", corpus / "rus_Cyrl.txt")
    printed += output("sources", "show", "wiki")
    assert whole(deep, printed), printed
    missing = invoke(db, "ingest", deep / "not-there", env=env)
    assert missing.exit_code == 1 and whole(deep / "not-there", missing.output), missing.output


def test_ci_runs_the_tests_with_no_terminal_size_nor_locale_of_the_developers():
    """The developer's wide terminal or locale cannot hide a test that depends on them."""
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    before_tests = ci[:ci.rindex("python -m pytest")]
    assert "unset COLUMNS LINES TERM" in before_tests
    assert "export LC_ALL=C.UTF-8" in before_tests and "CI_COLUMNS" in before_tests


SAMPLE = Path(__file__).resolve().parents[1] / "parallel_corpora" / "harbour_town"
RULE = "─"


def table_lines(output: str) -> list[str]:
    """The lines of every table in `output`: its header, its rule and its rows, to the blank
    line (or the end) that closes it. (A title is a line of prose: printed whole.)"""
    lines = output.splitlines()
    found: set[int] = set()
    for index, line in enumerate(lines):
        if line.strip() and set(line.strip()) == {RULE}:
            end = index + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            found.update(range(index - 1, end))
    return [lines[i] for i in sorted(found)]


@pytest.mark.slow
@pytest.mark.parametrize("columns", [None, "80"])
def test_every_table_fits_80_columns_one_line_per_language(tmp_path, columns):
    """Issue 52: at 80 columns and in a pipe (COLUMNS unset), no line of any command's table is
    wider than 80, every language is one line with its code whole, and no name is broken."""
    resolve_or_skip("cl100k_base")
    resolve_or_skip("gpt2")
    db = tmp_path / "a.db"
    env = {"COLUMNS": columns, "LINES": None}

    def output(*args: object) -> str:
        result = invoke(db, *args, env=env)
        assert result.exit_code == 0, result.output
        return result.stdout

    output("ingest", SAMPLE)
    output("run", "--vocab", "300,400", "--parity", "--pretokenize", "words", "-t", "cl100k_base",
           "-t", "gpt2", "--jobs", "1", "--no-report")
    shown = {name: output(*args) for name, args in {
        "show": ("show", "1"), "show --vocab": ("show", "1", "--vocab", "fra_Latn"),
        "corpus": ("corpus", "harbour_town"), "corpora": ("corpora",), "runs": ("runs",),
        "merges": ("merges", "1", "--by-language", "--top", "5"),
        "tokenize": ("tokenize", "1", "Le port est calme.")}.items()}
    from typer.testing import CliRunner

    from analyzer.cli import app

    shown["tokenizers"] = CliRunner().invoke(app, ["tokenizers"], env=env).stdout
    for name, text in shown.items():
        tables = table_lines(text)
        assert tables, (name, text)
        assert [line for line in tables if len(line) > 80] == [], (name, text)
    codes = ["arb_Arab", "tha_Thai", "zho_Hans", "eng_Latn"]
    show = shown["show"]
    for code in codes:  # one line per language per table, its code whole
        rows = [line for line in show.splitlines() if line.lstrip().startswith(code)]
        assert rows and all(len(line.split()) >= 3 for line in rows), (code, show)
    assert "Standard Ara…" in show  # a long name cut with care, never wrapped
    assert "vs English" in show and "vs shared [words] at 400" in show  # what each is against
    titles = [line for line in show.splitlines() if "same text" in line]
    assert titles and all(len(line) <= 80 for line in titles), titles
    assert "None" not in show  # a script a reader understands: "no letter"


def test_show_as_csv_is_the_json_records_and_as_markdown_the_tables(tmp_path):
    """`show --format csv` parses back to the numbers of `show --json`; markdown has the tables."""
    import csv
    import io
    import json
    import math

    db = tmp_path / "a.db"
    assert invoke(db, "ingest", SAMPLE).exit_code == 0
    assert invoke(db, "run", "--vocab", "300", "--parity", "--jobs", "1",
                  "--no-report").exit_code == 0
    document = json.loads(invoke(db, "show", "1", "--json").stdout)
    rows = list(csv.DictReader(io.StringIO(invoke(db, "show", "1", "--format", "csv").stdout)))
    assert len(rows) == len(document["records"]) > 0
    for row, record in zip(rows, document["records"]):
        for key, value in record.items():
            if isinstance(value, float):
                assert math.isclose(float(row[key]), value, rel_tol=1e-12), (key, row, record)
            elif value is None:
                assert row[key] == ""
            else:
                assert row[key] == str(value), (key, row[key], value)
    markdown = invoke(db, "show", "1", "--format", "markdown").stdout
    assert "| language | size 300 | parity 300 | own 300 |" in markdown
    assert "| eng_Latn English | 1.00x | 1.00x | 1.00x |" in markdown
    assert "| arb_Arab Standard Arabic |" in markdown  # a document has room: names whole
    assert RULE not in markdown


def test_every_line_of_the_main_commands_fits_80_columns_in_a_pipe(tmp_path):
    """Piped (COLUMNS unset, no terminal), every line the main commands print, on standard
    output and standard error, is at most 80 columns: the note after a run was one line of 328
    characters, a cost table's title 99, and `runs` said nothing of what a run that trained
    nothing measured (issue 71, item 9)."""
    import os
    import subprocess
    import sys

    resolve_or_skip("cl100k_base")
    resolve_or_skip("o200k_base")
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    db = tmp_path / "a.db"

    def piped(*args: str, database: bool = True) -> list[str]:
        where = ["--db", str(db)] if database else []
        done = subprocess.run([sys.executable, "-m", "analyzer", *args, *where],
                              env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=600, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return (done.stdout + done.stderr).splitlines()

    printed = {"ingest": piped("ingest", str(SAMPLE))}
    tokenizers = ["--tokenizer", "cl100k_base", "--tokenizer", "o200k_base"]
    # (a path is never cut, whatever its length: test_printed_paths_stay_whole_at_any_width)
    printed["run (measured)"] = piped("run", *tokenizers, "--jobs", "1", "--out", "reports")
    printed["run (trained)"] = piped("run", "--vocab", "300,400", "--parity", *tokenizers,
                                     "--jobs", "1", "--intervals", "--no-report")
    for run in ("1", "2"):
        printed[f"show {run}"] = piped("show", run)
        printed[f"show {run} --intervals"] = piped("show", run, "--intervals")
    printed["tokenizers"] = piped("tokenizers", database=False)
    printed["runs"] = piped("runs")
    wide = {name: [line for line in lines if cell_len(line) > 80]
            for name, lines in printed.items()}
    assert {name: lines for name, lines in wide.items() if lines} == {}
    runs = "\n".join(printed["runs"])
    assert "cl100k_base" in runs and "o200k_base" in runs  # what run 1 measured
    shown = " ".join(" ".join(printed["show 1 --intervals"]).split())
    assert "Cost against fairness: tokens of all languages vs cl100k_base" in shown
