"""Reports: structure and escaping, checked on the HTML itself (always runs)."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.report import build_page, plotly_file_name, write_report
from analyzer.runs import RunSettings, execute_run

runner = CliRunner()

HOSTILE = ["<script>alert(1)</script>", "</script><script>alert(2)</script>",
           "\"'><img src=x onerror=alert(3)>", "javascript:alert(4)"]


def hostile_corpus(folder):
    """Texts full of markup, repeated so that merges learn tokens made of it."""
    folder.mkdir()
    english = [f"{h} the cat {h} sat" for h in HOSTILE] * 3
    russian = [f"{h} кот {h} сидел" for h in HOSTILE] * 3
    (folder / "eng_Latn.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    (folder / "rus_Cyrl.txt").write_text("\n".join(russian) + "\n", encoding="utf-8")
    return folder


def test_a_page_has_every_figure_and_loads_only_the_plotly_file_beside_it(tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[256, 270, 300], cross=True, jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    html = path.read_text(encoding="utf-8")
    page = build_page(tiny_db, run_id)
    assert len(page.figures) == 6  # headline, by language, shared vs own, cross, bytes/token, units
    assert html.count("class=\"plotly-graph-div\"") == 6
    sources = re.findall(r"<script[^>]*src=['\"]([^'\"]+)", html)
    assert sources == [plotly_file_name()]
    assert (tmp_path / "reports" / plotly_file_name()).stat().st_size > 1_000_000
    assert not re.search(r"(src|href)=['\"](https?:)?//", html)
    assert (tmp_path / "reports" / "index.html").read_text().count(f"run-{run_id}.html") == 1
    assert "Thai" not in html and "Korean" in html


def test_self_contained_inlines_plotly(tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], per_language=False, jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "out", self_contained=True)
    html = path.read_text(encoding="utf-8")
    assert "<script src" not in html and len(html) > 1_000_000
    assert not (tmp_path / "out" / plotly_file_name()).exists()
    assert len(build_page(tiny_db, run_id).figures) == 4  # no shared-vs-own, no cross


def test_corpus_strings_are_escaped_everywhere(tmp_path):
    db = tmp_path / "h.db"
    name = "<script>alert('name')</script>"
    result = runner.invoke(app, ["ingest", str(hostile_corpus(tmp_path / "h")), "--name", name,
                                 "--db", str(db)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["run", "--vocab", "400", "--jobs", "1", "--db", str(db)])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "reports" / "run-1.html").read_text(encoding="utf-8")
    index = (tmp_path / "reports" / "index.html").read_text(encoding="utf-8")
    for page in (html, index):
        assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;name&#x27;)&lt;/script&gt;" in html
    # merges of the markup were learned and are shown, escaped
    assert "&lt;/script&gt;" in html.split("<h2>Merges</h2>")[1]


def test_report_command_and_its_errors(tiny_db, tmp_path):
    db_path = tmp_path / "tiny.db"
    execute_run(tiny_db, RunSettings(sizes=[300], jobs=1))
    result = runner.invoke(app, ["report", "1", "--out", str(tmp_path / "r"), "--price", "2.5",
                                 "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r" / "run-1.html").read_text(encoding="utf-8")
    assert "cost at 2.5 per million tokens" in html
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
