"""`analyzer report` and the reports `run` writes, through the command line."""

from __future__ import annotations

from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.runs import RunSettings, execute_run
from helpers import hostile_corpus

runner = CliRunner()


def test_corpus_strings_are_escaped_everywhere(tmp_path):
    db = tmp_path / "h.db"
    name = "<script>alert('name')<script>"  # a name may not hold '/' (check_corpus_name)
    result = runner.invoke(app, ["ingest", str(hostile_corpus(tmp_path / "h")), "--name", name,
                                 "--db", str(db)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["run", "--vocab", "400", "--jobs", "1", "--db", str(db)])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "reports" / "run-1.html").read_text(encoding="utf-8")
    index = (tmp_path / "reports" / "index.html").read_text(encoding="utf-8")
    for page in (html, index):
        assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;name&#x27;)&lt;script&gt;" in html
    # merges of the markup were learned and are shown, escaped
    assert "&lt;/script&gt;" in html.split("<h2>Merges</h2>")[1]


def test_report_command_and_its_errors(tiny_db, tmp_path):
    db_path = tmp_path / "tiny.db"
    execute_run(tiny_db, RunSettings(sizes=[300], jobs=1))
    result = runner.invoke(app, ["report", "1", "--out", str(tmp_path / "r"), "--price", "2.5",
                                 "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r" / "run-1.html").read_text(encoding="utf-8")
    assert "cost, US$ at $2.5 per million tokens" in html
    result = runner.invoke(app, ["report", "5", "--db", str(db_path)])
    assert result.exit_code == 1 and "no run 5" in result.output
    result = runner.invoke(app, ["report", "1", "--price", "-1", "--db", str(db_path)])
    assert result.exit_code == 1 and "--price" in result.output


def test_run_writes_its_report_unless_told_not_to(tiny_db, tmp_path):
    db_path = str(tmp_path / "tiny.db")
    result = runner.invoke(app, ["run", "--vocab", "300", "--jobs", "1", "--db", db_path])
    assert result.exit_code == 0 and "Report: reports/run-1.html" in result.output
    result = runner.invoke(app, ["run", "--vocab", "300", "--jobs", "1", "--no-report", "--db", db_path])
    assert result.exit_code == 0 and "Report:" not in result.output
    assert not (tmp_path / "reports" / "run-2.html").exists()
