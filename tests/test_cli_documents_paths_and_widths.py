"""The command line attacked again after round 6's fixes (issue 68): what a document written
to standard output holds, paths whose bytes are not UTF-8, and terminals of any width."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from helpers import TINY, RunProcess, corpus_folder, invoke, said


def test_texts_to_standard_output_are_the_texts_a_file_gets(tmp_path):
    """`corpus --texts` into a pipe took what looks like a terminal's codes out of the texts
    (Click strips `\\x1b[2J` when standard output is not a terminal), so the CSV sent to a
    provider was not the corpus; --out kept them. Both are the same bytes."""
    db = tmp_path / "a.db"
    texts = {"eng_Latn": ["clear \x1b[2J screen", "red \x1b[31mtext\x1b[0m"],
             "fra_Latn": ["effacer", "rouge"]}
    assert invoke(db, "ingest", corpus_folder(tmp_path / "codes", texts)).exit_code == 0
    piped = invoke(db, "corpus", "codes", "--texts")
    assert invoke(db, "corpus", "codes", "--texts", "--out", tmp_path / "t.csv").exit_code == 0
    assert piped.exit_code == 0, piped.output
    assert piped.stdout == (tmp_path / "t.csv").read_text(encoding="utf-8")
    assert "\x1b[2J" in piped.stdout and "\x1b[31m" in piped.stdout


def not_utf8(folder: Path) -> Path:
    """A corpus folder whose name holds the byte 0xff (a name from another system)."""
    path = Path(os.fsdecode(bytes(folder) + b"/caf\xff"))
    return corpus_folder(path)


def test_a_corpus_folder_whose_path_is_not_utf8_is_stored_with_its_path_escaped(tmp_path):
    """`ingest` of a folder named in bytes that are not UTF-8, with a --name, was exit 70
    (UnicodeEncodeError: the path, as its source, could not be stored)."""
    db = tmp_path / "a.db"
    result = invoke(db, "ingest", not_utf8(tmp_path), "--name", "cafe")
    assert result.exit_code == 0, result.output
    assert "caf\\xff" in said(invoke(db, "corpus", "cafe"))


def test_a_source_whose_path_is_not_utf8_is_refused_naming_the_byte(tmp_path):
    """`sources add` of such a folder was exit 70: a source keeps its files' paths, to read
    them again, so the path is refused, named, and nothing is registered."""
    db = tmp_path / "a.db"
    assert invoke(db, "ingest", corpus_folder(tmp_path / "tiny")).exit_code == 0
    result = invoke(db, "sources", "add", "src", not_utf8(tmp_path))
    assert result.exit_code == 1, result.output
    assert "caf\\xff" in said(result) and "not UTF-8 (the byte 0xff)" in said(result)
    assert "No training sources yet" in said(invoke(db, "sources"))


@pytest.fixture(scope="module")
def run_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("narrow") / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    assert invoke(db, "run", "--vocab", "300,400", "--jobs", "1", "--no-report").exit_code == 0
    return db


@pytest.mark.parametrize("columns", ["1", "20", "40", "50"])
def test_a_narrow_terminal_gets_every_column_of_a_table(run_db, columns):
    """rich shrank the columns that cannot wrap to nothing when a table's words did not fit
    the terminal, and left them out without a word: `runs` at 40 columns had no ids, at 50 no
    sizes; `show` at 24 columns no premium. A table too wide is printed whole, for the terminal
    to wrap, as wider tables are."""
    runs = invoke(run_db, "runs", env={"COLUMNS": columns}).stdout
    assert runs.split()[:5] == ["id", "corpus", "status", "langs", "sizes"], runs
    assert "300,400" in runs
    show = invoke(run_db, "show", "1", env={"COLUMNS": columns}).stdout
    for header in ("size 300", "size 400", "own 400"):
        assert header in show, (header, show)


def test_a_terminal_width_of_zero_is_no_width_not_an_empty_output(run_db):
    """COLUMNS=0 printed nothing at all (exit 0): every line was cut to no columns."""
    for command in (["show", "1"], ["runs"], ["corpora"]):
        result = invoke(run_db, *command, env={"COLUMNS": "0"})
        assert result.exit_code == 0 and result.stdout.strip(), (command, result.output)
    assert "1.00x" in invoke(run_db, "show", "1", env={"COLUMNS": "0"}).stdout


def analyzer(*args, env: dict | None = None):
    """`analyzer ARGS` as typed (no --db added)."""
    from typer.testing import CliRunner

    from analyzer.cli import app

    return CliRunner().invoke(app, list(map(str, args)), env=env)


def test_a_group_s_options_before_its_command_are_the_command_s(tmp_path, monkeypatch):
    """`analyzer sources --db a.db add NAME PATH` registered the source into ./analyzer.db
    (Click kept the group's --db to the group, and `add` took its default) and said it was
    registered; `sources --db a.db remove NAME` removed it from ./analyzer.db. The group's
    options are its command's; one the command does not have is refused."""
    monkeypatch.delenv("ANALYZER_DB", raising=False)
    db = tmp_path / "a.db"
    assert invoke(db, "ingest", corpus_folder(tmp_path / "tiny")).exit_code == 0
    added = analyzer("sources", "--db", db, "add", "src", tmp_path / "tiny")
    assert added.exit_code == 0, added.output
    assert not (tmp_path / "analyzer.db").exists()
    assert "src" in analyzer("sources", "--db", db).stdout
    shown = analyzer("sources", "--db", db, "--json", "show", "src")
    assert shown.exit_code == 0 and shown.stdout.startswith("{"), shown.output
    elsewhere = analyzer("sources", "--db", tmp_path / "b.db", "show", "src", "--db", db)
    assert elsewhere.exit_code == 0, elsewhere.output  # typed after the command: that one
    assert analyzer("sources", "--db", db, "remove", "src").exit_code == 0
    assert "No training sources yet" in analyzer("sources", "--db", db).stdout
    refused = analyzer("sources", "--json", "add", "src", tmp_path / "tiny")
    assert refused.exit_code == 2 and "--json is not an option of add" in said(refused)
    assert not (tmp_path / "analyzer.db").exists()


@pytest.mark.slow
@pytest.mark.parametrize("program", [[sys.executable, "-m", "analyzer"],
                                     [str(Path(sys.executable).parent / "analyzer")]],
                         ids=["python-m", "script"])
@pytest.mark.parametrize("stop, said", [(signal.SIGINT, "Interrupted: nothing was stored"),
                                        (signal.SIGTERM, "Interrupted (SIGTERM): nothing")])
def test_a_stop_while_the_command_loads_is_said_and_exits_130(tmp_path, program, stop, said):
    """Found attacking the command line again: Ctrl-C in a command's first seconds, while its
    modules load, printed a KeyboardInterrupt traceback (exit 1 then), SIGTERM ended it without
    a word (-15). Both entries (the console script, python -m) install the handling first."""
    command = RunProcess("corpora", "--db", str(tmp_path / "a.db"), program=program,
                         env={"ANALYZER_TEST_STALL_IMPORT": "analyzer.cli"})
    command.wait_for("analyzer-test: stalled importing analyzer.cli")
    os.kill(command.pid, stop)
    code, _, stderr = command.finish()
    assert code == 130, stderr
    assert said in stderr and "Traceback" not in stderr, stderr


def test_a_name_that_is_not_utf8_is_said_with_its_byte_escaped(tmp_path):
    """Found attacking the command line again: a corpus file named \\xff.txt was "unknown
    language code '\\udcff'" (Python's reading of the byte); the byte is written as the rest of
    the command line writes it."""
    folder = corpus_folder(tmp_path / "c")
    with open(os.path.join(os.fsencode(folder), b"\xff.txt"), "wb") as file:
        file.write(b"x\n" * len(next(iter(TINY.values()))))
    result = invoke(tmp_path / "a.db", "ingest", folder)
    assert result.exit_code != 0
    assert "unknown language code '\\xff'" in said(result), result.output
    assert "udcff" not in result.output


@pytest.mark.parametrize("command", [["corpora"], ["run"], ["ingest", "x"]])
def test_an_empty_database_path_is_said_empty(tmp_path, command):
    """Found attacking the command line again: `--db ""` (or ANALYZER_DB set empty) was "file
    '' is a directory" (an empty path read as "."); it is said empty. A folder is still one."""
    from typer.testing import CliRunner

    from analyzer.cli import app

    empty = CliRunner().invoke(app, [*command, "--db", ""])
    assert empty.exit_code == 2 and "the path is empty" in said(empty), empty.output
    folder = CliRunner().invoke(app, [*command, "--db", str(tmp_path)])
    assert folder.exit_code == 2 and "is a directory" in said(folder), folder.output
