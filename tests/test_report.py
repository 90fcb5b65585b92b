"""Reports: structure and escaping, checked on the HTML itself (always runs)."""

from __future__ import annotations

import re

import pandas as pd

from analyzer.report import build_page, plotly_file_name, write_report
from analyzer.report.costs import CONTENT_FITS, cost_table
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


def test_the_context_column_is_content_not_characters():
    """A language with a +25 % premium fits 80 % of the content the pivot does, however many
    characters that content is in its own script (fewer in Chinese, more in Tumbuka)."""
    frame = pd.DataFrame([
        dict(vocab="shared", size=300, lang="eng_Latn", tokens=100, chars=400, premium=1.0,
             overhead=0.0, chars_per_token=4.0),
        dict(vocab="shared", size=300, lang="zho_Hans", tokens=125, chars=120, premium=1.25,
             overhead=0.25, chars_per_token=0.96),
        dict(vocab="shared", size=300, lang="tum_Latn", tokens=128, chars=528, premium=1.28,
             overhead=0.28, chars_per_token=4.125),
    ])
    html = cost_table(frame, "eng_Latn", "shared", 300, price=1.0, context_window=1000, run=1)
    body = [re.findall(r"<td[^>]*>(.*?)</td>", row)
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html)]
    rows = {cells[0]: cells[1:] for cells in body if cells}
    headers = re.findall(r"<th[^>]*>(.*?)</th>", html)
    content = headers.index(CONTENT_FITS) - 1  # the language cell is not in `cells`
    characters = next(i for i, h in enumerate(headers) if h.startswith("characters")) - 1
    assert {lang.split()[0]: cells[content] for lang, cells in rows.items()} == \
        {"English": "100%", "Chinese": "80%", "Tumbuka": "78%"}
    assert {lang.split()[0]: cells[characters] for lang, cells in rows.items()} == \
        {"English": "4,000", "Chinese": "960", "Tumbuka": "4,125"}  # labelled as characters


def test_a_page_runs_only_its_static_files_and_reads_its_data_from_one_block(tiny_corpus, tmp_path):
    """Every script and style of a page is a file of report/static, inlined whole (a report is
    opened from disk); the filter's language names come from the page's one JSON block."""
    from analyzer.corpus import language_name, read_corpus
    from analyzer.report.files import static_text
    from analyzer.store import open_db, save_corpus
    from helpers import many_languages, page_data_of

    db = open_db(tmp_path / "five.db")
    save_corpus(db, read_corpus(many_languages(tmp_path / "five", 5, tiny_corpus)), "five")
    run_id = execute_run(db, RunSettings(sizes=[300], per_language=False, jobs=1))
    html = build_page(db, run_id).html
    scripts = re.findall(r"<script>(.*?)</script>", html.split("Written by analyzer")[1], re.S)
    assert scripts == [static_text(name) for name in  # after the figures' own (Plotly's)
                       ("page-data.js", "navigation.js", "tables.js", "reference.js", "bill.js",
                        "filter.js")]
    (style,) = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert style == static_text("report.css") + static_text("answer.css")
    languages = set(re.findall(r"<tr data-lang='([^']+)'", html))
    assert len(languages) == 5  # a page with the language filter
    data = page_data_of(html)  # the filter's names; another reference's pivot and scale; the
    assert data["names"] == {lang: language_name(lang) for lang in languages}  # priced models
    assert data["pivot"] == "eng_Latn" and set(data["scale"]) == {"low", "high", "above", "below"}
    assert data["bill"] == {"models": [], "counters": []}  # no tokenizer measured: no calculator
    assert "id='bill'" not in html
