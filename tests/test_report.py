"""Reports: structure and escaping, checked on the HTML itself (always runs)."""

from __future__ import annotations

import re

from analyzer.report import build_page, plotly_file_name, write_report
from analyzer.runs import RunSettings, execute_run


def test_a_page_has_every_figure_and_loads_only_the_plotly_file_beside_it(tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[256, 270, 300], cross=True, jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    html = path.read_text(encoding="utf-8")
    page = build_page(tiny_db, run_id)
    # headline; cost against fairness, who got the vocabulary, equal-cost sizes, allocation,
    # divergence; by language, shared vs own, cross, bytes/token, units
    assert len(page.figures) == 11
    assert html.count("class=\"plotly-graph-div\"") == 11
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
    assert len(build_page(tiny_db, run_id).figures) == 8  # no shared-vs-own, no cross
