"""Reports opened in a real headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright): every figure drawn with its traces, no script errors, no dialogs, no request
leaving the machine, and a screenshot written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.report import build_page, write_report
from analyzer.report.figures import TALLEST_CHART
from analyzer.runs import RunSettings, execute_run
from helpers import HOSTILE_CODE, hostile_corpus, hostile_document, many_languages

OPEN_SECTIONS = """() => document.querySelectorAll('details.section').forEach(d => { d.open = true; })"""
"""Every folded section opened (a click on each title), for tests of what they hold."""
LAID_OUT = """() => Array.from(document.querySelectorAll('details.section'))
    .every(d => d.hasAttribute('data-laid-out') || !d.querySelector('.js-plotly-plot'))"""
"""Every opened section's charts laid out anew (the page marks each section when they are)."""


def open_sections(page) -> None:
    page.evaluate(OPEN_SECTIONS)
    page.wait_for_function(LAID_OUT)


def open_page(browser, path: Path, screenshot: Path):
    """Load the page; return (traces per figure, problems seen)."""
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    problems = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("request", lambda r: problems.append(f"request: {r.url}")
            if not r.url.startswith(("file:", "data:", "blob:")) else None)
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_function("() => window.Plotly && document.querySelectorAll('.js-plotly-plot').length"
                           " === document.querySelectorAll('.plotly-graph-div').length")
    open_sections(page)
    traces = page.evaluate("""() => Array.from(document.querySelectorAll('.plotly-graph-div'))
        .map(div => ({id: div.id, traces: (div.data || []).length,
                      drawn: div.querySelectorAll('.main-svg').length}))""")
    page.screenshot(path=str(screenshot), full_page=True)
    page.close()
    return traces, problems


@pytest.mark.slow
def test_every_figure_renders_offline_without_errors(browser, tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[256, 270, 300], cross=True, jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    expected = [len(figure.data) for figure in build_page(tiny_db, run_id).figures]
    traces, problems = open_page(browser, path, tmp_path / "run.png")
    assert problems == []
    assert [t["traces"] for t in traces] == expected
    assert all(t["drawn"] >= 1 for t in traces)
    assert (tmp_path / "run.png").stat().st_size > 10_000


@pytest.mark.slow
def test_the_superbpe_views_render_with_the_transition_marked(browser, tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 300, 330], superbpe=[290], jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    page = build_page(tiny_db, run_id)
    titles = [figure.layout.title.text for figure in page.figures]
    assert "At size 330: shared BPE and SuperBPE" in titles
    own = next(f for f in page.figures if "own BPE and own SuperBPE" in (f.layout.title.text or ""))
    assert [trace.name for trace in own.data] == ["own vocabulary", "own SuperBPE @ 290"]
    curve = next(f for f in page.figures if "superbpe@290" in (f.layout.title.text or ""))
    assert [shape.x0 for shape in curve.layout.shapes] == [290]  # the transition, marked
    traces, problems = open_page(browser, path, tmp_path / "superbpe.png")
    assert problems == []
    assert [t["traces"] for t in traces] == [len(figure.data) for figure in page.figures]
    assert all(t["drawn"] >= 1 for t in traces)


@pytest.mark.slow
def test_the_extension_views_render_with_the_10_percent_line(browser, tiny_db, tmp_path):
    # An extension alone (no trained size): the page leads with it, and every figure draws.
    run_id = execute_run(tiny_db, RunSettings(sizes=[], extend=["o200k_base"], added=[8, 20],
                                              target=1.2, min_pair_count=1, jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    page = build_page(tiny_db, run_id)
    titles = [figure.layout.title.text or "" for figure in page.figures]
    curve = next(f for f in page.figures if "overhead by tokens added" in (f.layout.title.text or ""))
    assert len(curve.data) == 3  # one line per language
    assert [shape.y0 for shape in curve.layout.shapes] == [pytest.approx(10), pytest.approx(20)]
    assert any("overhead with the base and with +20" in title for title in titles)
    traces, problems = open_page(browser, path, tmp_path / "extension.png")
    assert problems == []
    assert [t["traces"] for t in traces] == [len(figure.data) for figure in page.figures]
    assert all(t["drawn"] >= 1 for t in traces)
    html = path.read_text(encoding="utf-8")
    assert "Extending o200k_base" in html and "Tokens to add to o200k_base" in html


@pytest.mark.slow
def test_the_algorithm_view_renders_and_its_menu_switches_the_size(browser, tiny_db, tmp_path):
    pytest.importorskip("tokenizers")
    run_id = execute_run(tiny_db, RunSettings(sizes=[520, 600], algorithms=["unigram", "wordpiece"],
                                              pretokenizers=["words"], per_language=False, jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    page = build_page(tiny_db, run_id)
    bars = next(f for f in page.figures if "BPE, Unigram and WordPiece" in (f.layout.title.text or ""))
    assert [trace.name for trace in bars.data] == ["bpe 520", "unigram 520", "wordpiece 520",
                                                   "bpe 600", "unigram 600", "wordpiece 600"]
    assert [trace.visible for trace in bars.data] == [False] * 3 + [True] * 3  # the largest
    frontier = next(f for f in page.figures if "Cost against fairness" in (f.layout.title.text or ""))
    assert {"unigram 600", "wordpiece 600"} <= {trace.name for trace in frontier.data}
    traces, problems = open_page(browser, path, tmp_path / "algorithms.png")
    assert problems == []
    assert [t["traces"] for t in traces] == [len(figure.data) for figure in page.figures]
    assert all(t["drawn"] >= 1 for t in traces)
    tab, errors = loaded(browser, path)
    index = [figure.layout.title.text for figure in page.figures].index(bars.layout.title.text)
    div = f"#figure-{index}"
    visible = f"() => document.querySelector('{div}').data.map(t => t.visible !== false)"
    assert tab.evaluate(visible) == [False] * 3 + [True] * 3
    tab.click(f"{div} .updatemenu-header-group")
    tab.locator(f"{div} .updatemenu-item-text", has_text="size 520").click()
    tab.wait_for_function(f"() => document.querySelector('{div}').data[0].visible === true")
    assert tab.evaluate(visible) == [True] * 3 + [False] * 3
    assert errors == []
    tab.close()


@pytest.mark.slow
def test_the_self_contained_page_and_the_index_work_too(browser, tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "alone", self_contained=True)
    single = tmp_path / "elsewhere.html"
    shutil.copy(path, single)  # a file sent to someone, without anything beside it
    traces, problems = open_page(browser, single, tmp_path / "alone.png")
    assert problems == [] and len(traces) == len(build_page(tiny_db, run_id).figures) == 9
    page = browser.new_page()
    page.goto((tmp_path / "alone" / "index.html").resolve().as_uri())
    assert page.locator(f"a[href='run-{run_id}.html']").count() == 1
    page.close()


@pytest.mark.slow
def test_a_hostile_corpus_renders_inert(browser, tmp_path):
    from analyzer.corpus import read_corpus
    from analyzer.store import open_db, save_corpus

    db = open_db(tmp_path / "h.db")
    # a name may not hold '/' (check_corpus_name); the units still hold </script>
    save_corpus(db, read_corpus(hostile_corpus(tmp_path / "h")), "<script>alert('name')<script>")
    run_id = execute_run(db, RunSettings(sizes=[300, 400], jobs=1))
    path = write_report(db, run_id, tmp_path / "reports")
    traces, problems = open_page(browser, path, tmp_path / "hostile.png")
    assert problems == []  # no alert dialog, no error, no request
    assert len(traces) == len(build_page(db, run_id).figures)


@pytest.mark.slow
def test_a_results_page_reads_a_language_code_of_markup_as_data(browser, tmp_path):
    """A results page's script takes the pivot and the names from the page's JSON block: a code
    holding </script> and <!-- runs nothing, breaks no script after it, and is named as
    written when it becomes the reference."""
    from analyzer.report.results import results_page

    path = tmp_path / "index.html"
    path.write_text(results_page(hostile_document()), encoding="utf-8")
    page = browser.new_page()
    problems = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.goto(path.resolve().as_uri(), wait_until="load")
    assert page.evaluate("() => pageData().pivot") == "eng_Latn"
    assert page.locator("#scatter circle").count() == 1  # results.js ran: one language, eng aside
    page.select_option("#reference", HOSTILE_CODE)
    assert page.inner_text(".legend .reference") == HOSTILE_CODE
    assert HOSTILE_CODE in page.inner_text("#said")
    assert float(page.get_attribute("tr[data-lang='eng_Latn'] td:nth-child(4)", "data-v")) == \
        pytest.approx(100 / 150, rel=1e-15)  # every digit
    page.close()
    assert problems == []


@pytest.mark.slow
def test_production_tokenizers_render_beside_trained_vocabularies(browser, tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 300], tokenizers=["cl100k_base", "gpt2"],
                                              jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    page = build_page(tiny_db, run_id)
    traces, problems = open_page(browser, path, tmp_path / "tokenizers.png")
    assert problems == []
    assert [t["traces"] for t in traces] == [len(f.data) for f in page.figures]
    headline = page.figures[0]  # the trained sizes' axis: no production tokenizer on it
    assert not any("production tokenizer" in (trace.name or "") for trace in headline.data)
    assert ">cl100k_base<br><span class='muted'>(GPT-4…)</span></th>" in page.html
    assert ">gpt2<br><span class='muted'>(GPT-2)</span></th>" in page.html  # the answer's columns
    only = execute_run(tiny_db, RunSettings(sizes=[], tokenizers=["o200k_base"]))
    traces, problems = open_page(browser, write_report(tiny_db, only, tmp_path / "reports"),
                                 tmp_path / "only.png")
    # the comparison, the costs, the vocabulary's scripts, the words split, the unit premiums
    assert problems == [] and len(traces) == 5


@pytest.mark.slow
def test_the_results_page_sorts_its_table_and_links_the_report(browser, tiny_db, tmp_path):
    from analyzer.report.results import write_results

    run_id = execute_run(tiny_db, RunSettings(sizes=[], tokenizers=["cl100k_base", "gpt2"],
                                              count="joined"))
    data, page_path, report = write_results(tiny_db, run_id, tmp_path / "results")
    traces, problems = open_page(browser, report, tmp_path / "report.png")
    assert problems == [] and traces
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda r: errors.append(r.url) if not r.url.startswith("file:") else None)
    page.goto(page_path.resolve().as_uri())
    values = "(i) => Array.from(document.querySelectorAll('#answer-table tbody tr'))" \
        ".map(row => parseFloat(row.cells[i].getAttribute('data-v')))"
    gpt2 = 4  # language, script, median, cl100k_base, gpt2
    page.click("#answer-table thead th:nth-child(5)")
    down = page.evaluate(values, gpt2)
    page.click("#answer-table thead th:nth-child(5)")
    up = page.evaluate(values, gpt2)
    assert down == sorted(up, reverse=True) and up == sorted(up) and len(up) == 3
    # intervals on request (joined counts have none: the switch changes nothing)
    page.check("#intervals")
    assert "[" not in page.locator("#answer-table tbody").inner_text()
    # another reference language: the premiums recomputed from the tokens, its own 1.00x
    page.click("#answer-table thead th:nth-child(3)")  # by the median, the highest first
    page.evaluate("() => { const body = document.querySelector('#answer-table tbody');"
                  " body.appendChild(body.rows[0]); }")  # out of order: the change sorts again
    page.select_option("#reference", "rus_Cyrl")
    russian = page.locator("#answer-table tr[data-lang='rus_Cyrl'] td").all_inner_texts()
    assert russian[2:] == ["1.00x", "1.00x"] and page.locator("#intervals").is_disabled()
    assert not page.locator("#intervals").is_checked()  # and says why
    assert "computed against English only" in page.locator("#intervals-said").inner_text()
    assert "than Russian" in page.locator("#said").inner_text()  # the sentences follow
    assert page.locator(".legend .reference").inner_text() == "Russian"
    tokens = "(lang) => Array.from(document.querySelector(`#answer-table tr[data-lang=${lang}]`)" \
        ".cells).slice(3).map(cell => parseFloat(cell.getAttribute('data-t')))"
    english, base = page.evaluate(tokens, "eng_Latn"), page.evaluate(tokens, "rus_Cyrl")
    shown = page.locator("#answer-table tr[data-lang='eng_Latn'] td").all_inner_texts()[2:]
    assert shown == [f"{e / b:.2f}x" for e, b in zip(english, base)]
    medians = page.evaluate(values, 2)  # sorted again by the median, on the new premiums
    assert medians == sorted(medians, reverse=True), medians
    from analyzer.report.answer import cell_color  # recoloured on the page's own scale

    backgrounds = page.evaluate("() => Array.from(document.querySelector("
                                "'#answer-table tr[data-lang=eng_Latn]').cells).slice(3)"
                                ".map(cell => cell.style.background)")
    assert backgrounds == [cell_color(e / b)[0].replace(",", ", ") for e, b in zip(english, base)]
    # grouping the answer by script leaves the other tables as they are (it sorted them too,
    # and failed on them: they have no script column)
    order = "() => Array.from(document.querySelectorAll('#tokenizers tbody tr'))" \
        ".map(row => row.cells[0].textContent)"
    before = page.evaluate(order)
    page.check(".answer input.by-script")
    assert page.evaluate(order) == before and len(before) == 2
    # two tokenizers side by side: a point per language, and what it shows said
    assert page.locator("#scatter circle").count() == 2  # the reference language aside
    assert "of 2 languages (Russian aside) pay a lower premium against Russian" in \
        page.locator("#compare-said").inner_text()
    ratios = page.locator("#ratios tbody tr")  # and their ratio, a row per language
    assert ratios.count() == 2
    x, y, ratio = (float(cell.rstrip("x")) for cell in ratios.first.locator("td").all_text_contents()[1:])
    assert ratio == pytest.approx(y / x, abs=0.01)
    assert page.locator("a[href='report.html']").count() == 1
    page.close()
    assert errors == []


@pytest.mark.slow
def test_imported_counts_render_beside_production_tokenizers(browser, tiny_db, tmp_path):
    from analyzer.store import load_counts

    first = execute_run(tiny_db, RunSettings(sizes=[300], per_language=False, jobs=1))
    lines = ["unit,lang,tokens"] + [f"{unit},{lang},{tokens}"
                                   for scope, _, _, lang, units in load_counts(tiny_db, first)
                                   for unit, tokens in enumerate(units)]
    (tmp_path / "counts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 300], tokenizers=["cl100k_base"],
                                              counts=[f"closed-1={tmp_path / 'counts.csv'}"],
                                              jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    page = build_page(tiny_db, run_id)
    traces, problems = open_page(browser, path, tmp_path / "imported.png")
    assert problems == []
    assert [t["traces"] for t in traces] == [len(f.data) for f in page.figures]
    names = {trace.name for figure in page.figures for trace in figure.data}
    assert "closed-1 (imported)" in names  # the comparison's bars
    # the trained sizes' axis has no tokenizer on it; the answer table has both
    assert not [t.name for t in page.figures[0].data if "production" in (t.name or "")]
    assert ">closed-1</th>" in page.html and ">cl100k_base<br><span class='muted'>(GPT-4…)" \
        in page.html


@pytest.mark.slow
def test_the_cost_view_draws_each_priced_model_and_opens_its_table(browser, tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[], tokenizers=["cl100k_base", "o200k_base"]))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_function("() => window.Plotly && document.querySelectorAll('.js-plotly-plot').length"
                           " === document.querySelectorAll('.plotly-graph-div').length")
    open_sections(page)
    heatmap = page.locator("section:has(h2:text-is('What the same content costs, by model'))")
    cells = heatmap.locator("g.heatmaplayer text, .textpoint text").all_text_contents()
    assert len(cells) == 5 * 3 and all(cell.startswith("$") for cell in cells)  # 5 models x 3 languages
    # the buttons switch to the same content as one request per unit: dearer, every cell
    heatmap.locator(".updatemenu-button", has_text="as 6 one-unit requests").click()
    figure = heatmap.locator(".js-plotly-plot")
    figure.locator(".gtitle", has_text="one-unit requests").wait_for()
    framed = heatmap.locator("g.heatmaplayer text, .textpoint text").all_text_contents()
    assert len(framed) == 5 * 3
    assert all(float(a.strip("$ ▲")) > float(b.strip("$ ▲")) for a, b in zip(framed, cells))
    costs = page.locator("section:has(h2:text-is('What it costs'))")
    details = costs.locator("details:not(.section)").filter(has_text="GPT-4o mini")
    summary, table = details.locator("summary"), details.locator("table")
    assert not table.is_visible()
    summary.click()
    assert table.is_visible() and table.locator("tbody tr").count() == 3
    page.screenshot(path=str(tmp_path / "costs.png"), full_page=True)
    page.close()
    assert problems == []


CODE = r"^[a-z]{3}_[A-Z][a-z]{3}$"
NUMERIC = r"^(tokens|vocab_size|languages|chars_in_window|median_premium.*|premium.*|ratio_.*|" \
    r".*_usd|.*_vs_reference.*|.*_per_million_tokens)$"
"""The columns of a page's downloads that hold numbers (analyzer.report.downloads names them)."""
FORMATTED = r"^[-+$]*[0-9][0-9,]*(\.[0-9]+)?[x%]$|^[-+]?\$|^-?[0-9]{1,3}(,[0-9]{3})+"
"""A number as the page shows it (`12,639`, `$0.878`, `1.62x`, `80%`), never as a CSV holds it."""


def downloaded_csvs(page) -> dict[str, list[dict]]:
    """Every table's CSV, as its Download button saves it in Chromium: by file name, its rows
    parsed by the csv module (each file name once: a second of the same name fails)."""
    import csv
    import io

    found: dict[str, list[dict]] = {}
    for index in range(page.locator("button.csv").count()):
        with page.expect_download() as caught:  # a folded section's button is clicked too
            page.evaluate("(i) => document.querySelectorAll('button.csv')[i].click()", index)
        download = caught.value
        assert download.suggested_filename not in found, download.suggested_filename
        text = Path(download.path()).read_text(encoding="utf-8")
        found[download.suggested_filename] = list(csv.DictReader(io.StringIO(text)))
    return found


def check_travelling_csv(name: str, rows: list[dict], run_id: int, reference: str | None):
    """A CSV read away from its page: named by its run, its run (and reference, where a number
    in it is over a language) on every row, a language's code beside its name, and plain
    numbers only."""
    import re

    assert name.startswith(f"run-{run_id}-") and name.endswith(".csv"), name
    assert rows, name
    assert all(row["run"] == str(run_id) for row in rows), name
    if reference is not None and "lang" in rows[0]:
        assert all(row["reference"] == reference for row in rows), name
        assert all(re.match(CODE, row["lang"]) for row in rows), name
        assert all(row["language"] and row["language"] != row["lang"] for row in rows), name
    for column in rows[0]:
        cells = [row[column] for row in rows]
        assert not [cell for cell in cells if re.match(FORMATTED, cell)], (name, column, cells)
        if re.match(NUMERIC, column):
            assert all(cell == "" or float(cell) == float(cell) for cell in cells), (name, column)
            assert any(cell != "" for cell in cells), (name, column)


@pytest.mark.slow
def test_every_download_of_the_report_is_a_csv_that_says_what_it_holds(browser, tiny_db,
                                                                       tmp_path):
    """Issue 71: each table's CSV, downloaded in Chromium, parses, is named by the run and what
    it holds (no two alike), and holds codes, the reference, the run and plain numbers: a
    priced model's costs with the model on every row, to full precision."""
    run_id = execute_run(tiny_db, RunSettings(sizes=[300], per_language=False, jobs=1,
                                              tokenizers=["cl100k_base", "o200k_base"]))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(path.resolve().as_uri(), wait_until="load")
    found = downloaded_csvs(page)
    page.close()
    for name, rows in found.items():
        check_travelling_csv(name, rows, run_id, "eng_Latn")
    premiums = found[f"run-{run_id}-premiums-vs-eng_Latn.csv"]
    assert {"lang", "language", "script", "median_premium", "cl100k_base", "o200k_base",
            "reference", "run"} <= set(premiums[0])
    english = next(row for row in premiums if row["lang"] == "eng_Latn")
    assert float(english["cl100k_base"]) == 1.0
    gpt4o = found[f"run-{run_id}-cost-GPT-4o.csv"]
    assert {row["model"] for row in gpt4o} == {"GPT-4o"} and gpt4o[0]["tokenizer"] == "o200k_base"
    assert {"tokens", "input_cost_usd", "output_cost_usd", "cost_vs_reference",
            "input_usd_per_million_tokens"} <= set(gpt4o[0])
    assert all(float(row["input_cost_usd"]) > 0 for row in gpt4o)
    assert any(len(row["input_cost_usd"].split(".")[-1]) > 3 for row in gpt4o)  # not cut to cents
    assert any(name.startswith(f"run-{run_id}-cost-shared-300") for name in found)  # assumed price


@pytest.mark.slow
def test_the_results_page_s_downloads_follow_the_reference_chosen(browser, tiny_db, tmp_path):
    """Issue 71: the results page's CSVs say what they hold, and the answer's, after another
    reference is chosen, is named by it and holds its premiums (1 for the reference itself)."""
    from analyzer.report.results import write_results

    run_id = execute_run(tiny_db, RunSettings(sizes=[], tokenizers=["cl100k_base", "gpt2"]))
    _, page_path, _ = write_results(tiny_db, run_id, tmp_path / "results")
    page = browser.new_page()
    page.goto(page_path.resolve().as_uri())
    heading = page.locator("#answer-table thead th[data-csv='cl100k_base']")
    assert heading.inner_text().split() == ["cl100k_base", "(GPT-4…)"]  # the long form in its title
    assert "cl100k_base (GPT-4, GPT-4 Turbo, GPT-3.5 Turbo" in heading.get_attribute("title")
    page.select_option("#reference", "rus_Cyrl")
    found = downloaded_csvs(page)
    page.close()
    for name, rows in found.items():
        reference = "rus_Cyrl" if "-vs-rus_Cyrl" in name else "eng_Latn"
        check_travelling_csv(name, rows, run_id, reference)
    premiums = found[f"run-{run_id}-premiums-vs-rus_Cyrl.csv"]
    russian = next(row for row in premiums if row["lang"] == "rus_Cyrl")
    assert float(russian["cl100k_base"]) == float(russian["gpt2"]) == 1.0
    tokenizers = {row["tokenizer"]: row for row in found[f"run-{run_id}-tokenizers.csv"]}
    assert "GPT-4" in tokenizers["cl100k_base"]["models"].split("; ")
    assert tokenizers["gpt2"]["vocab_size"] == "50257"
    two = found[f"run-{run_id}-two-tokenizers-vs-rus_Cyrl.csv"]
    assert {"premium_cl100k_base", "premium_gpt2", "ratio_y_over_x"} <= set(two[0])


@pytest.mark.slow
def test_split_rule_views_render_and_the_selector_switches_the_headline(browser, tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[270, 300], pretokenizers=["none", "cl100k", "words"],
                                              tokenizers=["o200k_base"], jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    expected = [len(figure.data) for figure in build_page(tiny_db, run_id).figures]
    traces, problems = open_page(browser, path, tmp_path / "split.png")
    assert problems == [] and [t["traces"] for t in traces] == expected
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_function("() => document.querySelector('#figure-0 .updatemenu-header-group')")
    open_sections(page)
    before = page.evaluate("() => document.getElementById('figure-0').layout.title.text")
    page.click("#figure-0 .updatemenu-header-group")
    page.locator("#figure-0 .updatemenu-item-text", has_text="pre-tokenizer: words").click()
    page.wait_for_function("(before) => document.getElementById('figure-0').layout.title.text "
                           "!== before", arg=before)
    title = page.evaluate("() => document.getElementById('figure-0').layout.title.text")
    assert "pre-tokenizer words" in title and "pre-tokenizer" not in before
    visible = page.evaluate("() => document.getElementById('figure-0').data.filter(t => t.visible !== "
                            "false).length")
    assert visible == 3  # three languages under the rule chosen (o200k is in the answer table)
    page.close()


FAIRNESS_VIEWS = ("parity-aware training takes the Gini of premiums from", "Who got the vocabulary", "Equal-cost size",
                  "How differently languages use", "How much of the shared vocabulary")


def loaded(browser, path: Path, open_all: bool = True):
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_function("() => window.Plotly && document.querySelectorAll('.js-plotly-plot').length"
                           " === document.querySelectorAll('.plotly-graph-div').length")
    if open_all:
        open_sections(page)
    return page, problems


def titles_in(page) -> list[str]:
    return page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                         ".map(div => div.layout.title.text || '')")


@pytest.mark.slow
def test_the_fairness_views_render_beside_the_shared_ones(browser, tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[256, 280, 320], parity=True,
                                              weights={"eng": 2}, jobs=1))
    path = write_report(tiny_db, run_id, tmp_path / "reports")
    built = build_page(tiny_db, run_id)
    traces, problems = open_page(browser, path, tmp_path / "fairness.png")
    assert problems == []
    assert [t["traces"] for t in traces] == [len(figure.data) for figure in built.figures]
    assert all(t["drawn"] >= 1 for t in traces)
    page, problems = loaded(browser, path)
    titles = titles_in(page)
    for view in FAIRNESS_VIEWS:
        assert any(view in title for title in titles), (view, titles)
    # the parity vocabulary is drawn beside the shared one, per language
    names = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                          ".flatMap(div => div.data.map(t => t.name || ''))")
    assert any("parity" in name for name in names)
    assert "unit weights" in page.content() and "eng_Latn x2" in page.content()
    page.close()
    assert problems == []


def many_languages_corpus(folder: Path) -> Path:
    """The shipped sample's 12 languages and two more (their texts re-used: only the drawing is
    under test), so the report takes its many-languages form."""
    sample = Path(__file__).parent.parent / "parallel_corpora" / "harbour_town"
    folder.mkdir()
    for source in sample.glob("*.txt"):
        shutil.copy(source, folder / source.name)
    shutil.copy(sample / "rus_Cyrl.txt", folder / "ukr_Cyrl.txt")
    shutil.copy(sample / "spa_Latn.txt", folder / "ita_Latn.txt")
    return folder


@pytest.mark.slow
def test_many_languages_get_a_heatmap_headline_and_a_filter_that_narrows_every_chart(browser,
                                                                                      tmp_path):
    from analyzer.corpus import read_corpus
    from analyzer.store import open_db, save_corpus

    db = open_db(tmp_path / "many.db")
    save_corpus(db, read_corpus(many_languages_corpus(tmp_path / "many")), "many")
    run_id = execute_run(db, RunSettings(sizes=[300, 400], parity=True, per_language=False,
                                         jobs=1))
    path = write_report(db, run_id, tmp_path / "reports")
    page, problems = loaded(browser, path)
    headline = page.evaluate("() => document.getElementById('figure-0').data.map(t => t.type)")
    assert "heatmap" in headline
    rows = page.evaluate("() => document.getElementById('figure-0').data"
                         ".filter(t => t.type === 'heatmap')[0].y.length")
    assert rows == 14
    assert page.locator("#language-filter input[type=checkbox]").count() >= 7  # scripts

    def drawn_languages(figure: str) -> int:
        return page.evaluate(f"""() => {{
            var div = document.getElementById('{figure}');
            var heat = div.data.filter(t => t.type === 'heatmap')[0];
            return heat ? heat.y.length : div.data.filter(t => (t.x || []).length).length; }}""")

    heights = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                            ".map(div => div.layout.height)")
    section_heights = "() => Array.from(document.querySelectorAll('.js-plotly-plot'))" \
        ".map(div => div.closest('section').getBoundingClientRect().height)"
    sections_before = page.evaluate(section_heights)
    page.fill("#language-filter input[type=search]", "cyrl")
    page.wait_for_function("() => document.getElementById('filter-count').textContent"
                           ".startsWith('2 of 14')")
    assert drawn_languages("figure-0") == 2  # Russian and Ukrainian rows left in the heatmap
    shown_rows = page.evaluate("""() => Array.from(document.querySelectorAll('table'))
        .filter(table => table.querySelector('tr[data-lang]'))
        .map(table => Array.from(table.querySelectorAll('tr[data-lang]'))
             .filter(row => row.style.display !== 'none').length)""")
    assert shown_rows and set(shown_rows) == {2}  # every table narrowed to the two as well
    after = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                          ".map(div => div.layout.height)")
    assert any(a < b for a, b in zip(after, heights))  # per-language charts shrank
    for chart_before, chart_after, section_before, section_after in zip(
            heights, after, sections_before, page.evaluate(section_heights)):
        # and their sections with them, by as much: no band of blank page left behind
        assert section_before - section_after == pytest.approx(chart_before - chart_after, abs=2)
    page.fill("#language-filter input[type=search]", "")
    page.wait_for_function("() => document.getElementById('filter-count').textContent"
                           ".startsWith('14 of 14')")
    latin = page.locator("#language-filter input[type=checkbox][value=Latn]")
    latin.uncheck()
    page.wait_for_function("() => document.getElementById('filter-count').textContent"
                           ".startsWith('8 of 14')")
    assert drawn_languages("figure-0") == 8
    page.screenshot(path=str(tmp_path / "many.png"), full_page=True)
    page.close()
    assert problems == []


@pytest.mark.slow
def test_every_section_is_in_the_sticky_contents_and_collapses(browser, tiny_db, tmp_path):
    run_id = execute_run(tiny_db, RunSettings(sizes=[256, 300], tokenizers=["cl100k_base"], jobs=1))
    page, problems = loaded(browser, write_report(tiny_db, run_id, tmp_path / "reports"),
                            open_all=False)
    links = page.evaluate("() => Array.from(document.querySelectorAll('#contents ol a'))"
                          ".map(a => a.getAttribute('href'))")
    sections = page.evaluate("() => Array.from(document.querySelectorAll('section'))"
                             ".map(section => '#' + section.id)")
    assert links == sections and len(set(sections)) == len(sections) >= 10
    # the cost view is one click away, its title shown below the sticky bar
    page.click("#contents a.jump:text-is('What it costs')")
    page.wait_for_function("() => location.hash === '#what-it-costs'")
    bar, title = (page.locator(selector).bounding_box()
                  for selector in ("#toolbar", "#what-it-costs h2"))
    assert bar["y"] == 0 and bar["y"] + bar["height"] <= title["y"] < 1000 - title["height"]
    # a term links to its plain definition, in the Terms section, opened on the way
    term = page.locator("summary .takeaway a.term").first
    name = term.inner_text()
    term.click()
    page.wait_for_function("() => document.querySelector('#terms details').open")
    definition = page.locator(f"#terms dt:text-is('{name}') + dd")
    assert definition.is_visible() and len(definition.inner_text()) > 40
    page.click("#contents a.jump:text-is('Back to top')")
    page.wait_for_function("() => window.scrollY === 0")
    # the link opened the cost view's section; the others are folded under their takeaways
    assert page.evaluate("() => document.querySelector('#what-it-costs details').open")
    page.evaluate("() => document.querySelectorAll('details.section').forEach(d => {"
                  " if (!d.closest('#what-it-costs')) d.open = false; })")
    # a section opens on its title, its chart laid out anew, and closes again
    first = page.locator("section").first
    assert not first.locator(".js-plotly-plot").is_visible()
    assert first.locator("summary .takeaway").is_visible()
    first.locator("summary").click()
    assert first.locator(".js-plotly-plot .main-svg").first.is_visible()
    assert first.locator(".js-plotly-plot").bounding_box()["width"] > 1000
    first.locator("details[data-laid-out]").wait_for(state="attached")
    chart = first.locator(".js-plotly-plot")  # laid out anew at its own height, not the default
    assert chart.evaluate("div => div.layout.height") == float(chart.get_attribute("data-height"))
    assert abs(chart.bounding_box()["height"] - float(chart.get_attribute("data-height"))) <= 2
    first.locator("summary").click()
    assert not first.locator(".js-plotly-plot").is_visible()
    page.screenshot(path=str(tmp_path / "navigation.png"))
    page.close()
    assert problems == []


@pytest.mark.slow
def test_trained_and_production_columns_each_get_their_own_colour_scale(tmp_path):
    """A production tokenizer's large overheads no longer wash out the trained columns: each
    kind of column spans its own largest overhead, and every cell carries its number."""
    from analyzer.corpus import read_corpus
    from analyzer.store import open_db, save_corpus

    db = open_db(tmp_path / "many.db")
    save_corpus(db, read_corpus(many_languages_corpus(tmp_path / "many")), "many")
    run_id = execute_run(db, RunSettings(sizes=[300, 400], per_language=False, jobs=1,
                                         pretokenizers=["none", "words"],
                                         tokenizers=["cl100k_base"]))
    page = build_page(db, run_id)
    views = [f for f in page.figures if any(t.name == "production tokenizers" for t in f.data)]
    assert len(views) >= 2  # the headline and the split rules
    for figure in views:
        for trace in figure.data:
            if trace.type != "heatmap" or trace.visible is False or not trace.name:
                continue
            values = [abs(v) for row in trace.z for v in row if v == v]
            assert trace.zmax == pytest.approx(max(values)) and trace.zmin == -trace.zmax
            assert trace.texttemplate == "%{z:+.0f}%"
        trained, production = (next(t for t in figure.data if t.type == "heatmap"
                                    and t.name == name and t.visible is not False)
                               for name in ("trained vocabularies", "production tokenizers"))
        assert trained.colorscale != production.colorscale
        assert trained.colorbar.title.text != production.colorbar.title.text


LAYOUT = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(div => {
    // Every text box of the figure (title, axis titles, tick labels, legend, colour bars,
    // menus, sliders, a heatmap's numbers), clipped to the figure: no two of different kinds
    // may intersect, nor two numbers of a heatmap.
    const own = div.getBoundingClientRect();
    const boxes = [];
    const add = (kind, element) => {
        const r = element.getBoundingClientRect();
        const box = {kind, text: (element.textContent || '').slice(0, 40),
                     l: Math.max(r.left, own.left), t: Math.max(r.top, own.top),
                     r: Math.min(r.right, own.right), b: Math.min(r.bottom, own.bottom)};
        if (box.r - box.l >= 1 && box.b - box.t >= 1 && (kind !== 'cells' || box.text)) boxes.push(box);
    };
    const kinds = {cells: '.heatmaplayer text', title: '.g-gtitle text',
                   xtitle: '[class^="g-x"][class$="title"] text',
                   ytitle: '[class^="g-y"][class$="title"] text', xticks: '.xtick text',
                   yticks: '.ytick text', legend: '.legend .bg', colorbar: '.colorbar',
                   menu: '.updatemenu-header-group', slider: '.slider-container'};
    Object.entries(kinds).forEach(([kind, selector]) =>
        div.querySelectorAll(selector).forEach(element => add(kind, element)));
    const overlaps = [];
    boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
        if (a.kind === b.kind && a.kind !== 'cells') return;  // a heatmap's numbers: none over another
        const w = Math.min(a.r, b.r) - Math.max(a.l, b.l), h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
        if (w > 2 && h > 2) overlaps.push(`${a.kind} '${a.text}' x ${b.kind} '${b.text}'`);
    }));
    // The tallest band of the figure with nothing drawn in it (from its top to its bottom).
    const drawn = boxes.map(b => [b.t, b.b]);
    div.querySelectorAll('.main-svg .bg, .main-svg .plot').forEach(element => {
        const r = element.getBoundingClientRect();
        if (r.height > 0) drawn.push([Math.max(r.top, own.top), Math.min(r.bottom, own.bottom)]);
    });
    drawn.sort((x, y) => x[0] - y[0]);
    let reach = own.top, blank = 0;
    drawn.forEach(([top, bottom]) => { blank = Math.max(blank, top - reach); reach = Math.max(reach, bottom); });
    blank = Math.max(blank, own.bottom - reach);
    return {figure: div.id, title: (div.layout.title.text || '').slice(0, 60), overlaps,
            blank: Math.round(blank)};
})"""
"""For each figure of a page: the text boxes that intersect, and its tallest blank band."""

BLANK_AT_MOST = 110
"""Pixels: a margin, not a band of nothing (a figure's bottom margin holds its axis title)."""


@pytest.mark.slow
@pytest.mark.parametrize("n_languages", [3, 12, 48, 200])
def test_no_text_overlaps_and_no_blank_band_at_any_number_of_languages(browser, tmp_path,
                                                                        n_languages):
    """Reports of 3 to 200 languages (real names of every length, many scripts, two
    pre-tokenizers, parity and production tokenizers), checked in the rendered page: no title,
    axis title, tick label, legend, colour bar, menu or slider of a figure runs over another,
    and no figure has a band of empty space beyond its margins."""
    from analyzer.corpus import read_corpus
    from analyzer.store import open_db, save_corpus

    sample = Path(__file__).parent.parent / "parallel_corpora" / "harbour_town"
    db = open_db(tmp_path / "many.db")
    save_corpus(db, read_corpus(many_languages(tmp_path / "corpus", n_languages, sample)), "many")
    run_id = execute_run(db, RunSettings(sizes=[300, 400], per_language=False, parity=True,
                                         pretokenizers=["none", "words"],
                                         tokenizers=["cl100k_base", "o200k_base"], jobs=1))
    path = write_report(db, run_id, tmp_path / "reports")
    answer_first(browser, path, tmp_path, n_languages)
    page, problems = loaded(browser, path)
    found = page.evaluate(LAYOUT)
    boxes = page.evaluate("() => Array.from(document.querySelectorAll('.figure'))"
                          ".map(box => box.getBoundingClientRect().height)")
    page.screenshot(path=str(tmp_path / f"layout-{n_languages}.png"), full_page=n_languages <= 12)
    page.close()
    assert problems == []
    assert len(found) >= 12
    assert [(f["title"], f["overlaps"]) for f in found if f["overlaps"]] == []
    assert [(f["title"], f["blank"]) for f in found if f["blank"] > BLANK_AT_MOST] == []
    # no chart takes more than two screens of the page: a taller one scrolls in its own box
    assert max(boxes) <= TALLEST_CHART + 2, boxes


FIRST_SCREEN = """() => {
    const box = element => element.getBoundingClientRect();
    const table = document.getElementById('answer-table');
    const texts = [...document.querySelectorAll('p.lead, h1, #answer-table th, #answer-table td,'
                                                + ' .tools, summary h2, summary .takeaway')];
    return {
        lead: Math.max(...[...document.querySelectorAll('p.lead')].map(p => box(p).bottom)),
        head: box(table.tHead).bottom, firstRow: box(table.tBodies[0].rows[0]).bottom,
        rows: table.tBodies[0].rows.length, columns: table.tHead.rows[0].cells.length,
        height: document.documentElement.scrollHeight,
        wide: document.documentElement.scrollWidth,
        overflowing: texts.filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e)
                                  .overflowX !== 'auto').map(e => e.textContent.slice(0, 60)),
    };
}"""
PAGE_BUDGET = 4 * 900
"""The report before anything is opened, at 1366x900: at most four screens, at any number of
languages (the answer table scrolls in its own box)."""
COLUMN = """(index) => Array.from(document.querySelectorAll('#answer-table tbody tr'))
    .map(row => row.cells[index].getAttribute('data-v'))"""


def answer_first(browser, path: Path, tmp_path: Path, n_languages: int) -> None:
    """Issue 51: the first screen at 1366x900 holds the plain sentences and the top of the
    answer table; no text overflows its box; the page stays within its budget; the table
    sorts by any column, groups by script and downloads as the CSV of its numbers."""
    import csv
    import io

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.resolve().as_uri(), wait_until="load")
    seen = page.evaluate(FIRST_SCREEN)
    page.screenshot(path=str(tmp_path / f"first-screen-{n_languages}.png"))
    assert seen["lead"] <= seen["head"] <= seen["firstRow"] <= 900, seen
    assert seen["rows"] == n_languages and seen["columns"] >= 3 + 4  # shared, parity, 2 tokenizers
    assert seen["overflowing"] == [] and seen["wide"] <= 1366, seen
    assert seen["height"] <= PAGE_BUDGET, seen
    numbers = lambda values: [float(v) for v in values]  # noqa: E731
    medians = numbers(page.evaluate(COLUMN, 2))
    assert medians == sorted(medians, reverse=True)  # the highest median premium first
    page.click("#answer-table th[data-csv='cl100k_base']")  # its models under its name
    cl100k = page.evaluate("() => Array.from(document.querySelectorAll('#answer-table thead th'))"
                           ".findIndex(th => th.getAttribute('data-csv') === 'cl100k_base')")
    assert numbers(page.evaluate(COLUMN, cl100k)) == sorted(numbers(page.evaluate(COLUMN, cl100k)),
                                                            reverse=True)
    page.click("#answer-table th[data-csv='cl100k_base']")  # again: the other way
    assert numbers(page.evaluate(COLUMN, cl100k)) == sorted(numbers(page.evaluate(COLUMN, cl100k)))
    page.check(".answer input.by-script")
    scripts = page.evaluate(COLUMN, 1)
    assert scripts == sorted(scripts, key=str.lower)  # grouped by script
    with page.expect_download() as download:
        page.click(".answer button.csv")
    rows = list(csv.reader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    # issue 71: the code, a column per heading by its name in the CSV, each cell's plain
    # number, then the reference and the run (analyzer.report.downloads)
    shown = page.evaluate("""() => Array.from(document.querySelectorAll('#answer-table tr'))
        .map(row => row.parentNode.tagName === 'THEAD'
             ? ['lang', ...Array.from(row.cells).map(cell => cell.getAttribute('data-csv')),
                'reference', 'run']
             : [row.getAttribute('data-lang'),
                ...Array.from(row.cells).map(cell => cell.getAttribute('data-v') ?? cell.textContent.trim()),
                'eng_Latn', '1'])""")
    assert rows == shown and len(rows) == n_languages + 1
    assert download.value.suggested_filename == "run-1-premiums-vs-eng_Latn.csv"
    assert all(abs(float(cell.rstrip("x")) - float(value)) < 0.006  # the numbers shown
               for row, text in zip(rows[1:], page.evaluate(
                   "() => Array.from(document.querySelectorAll('#answer-table tbody tr'))"
                   ".map(row => Array.from(row.cells).slice(2).map(c => c.textContent))"))
               for value, cell in zip(row[3:], text))
    page.close()
    assert errors == []


@pytest.fixture
def priced_run(db):
    """A run of the tiny corpus: a shared vocabulary and two priced tokenizers."""
    from helpers import cli_output, resolve_or_skip

    for name in ("cl100k_base", "o200k_base"):
        resolve_or_skip(name)
    cli_output(db, "run", "--vocab", "300", "--jobs", "1", "-t", "cl100k_base", "-t",
               "o200k_base", "--no-report")
    return db


def report_and_results(db, tmp_path: Path) -> tuple[Path, Path]:
    """The run's report and its results page, as the command line writes them."""
    from helpers import cli_output

    cli_output(db, "results", "1", "--out", tmp_path / "results")
    return tmp_path / "results" / "report.html", tmp_path / "results" / "index.html"


CELLS = """() => Array.from(document.querySelectorAll('#answer-table tbody tr')).flatMap(row =>
    Array.from(row.cells).slice(3).filter(cell => !cell.hidden && cell.hasAttribute('data-t'))
    .map(cell => [row.getAttribute('data-lang'),
                  document.querySelector('#answer-table thead tr').cells[cell.cellIndex]
                      .getAttribute('data-vocab'),
                  parseFloat(cell.getAttribute('data-v')), cell.textContent]))"""
"""Each shown premium of the answer table: (language, vocabulary, premium, text)."""


@pytest.mark.slow
def test_the_report_s_reference_selector_gives_show_s_premiums(browser, priced_run, tmp_path):
    """Issue 71: the report's answer table against another reference language holds, cell
    for cell, what `show --json --reference LANG` says; its legend, CSV and sentences follow,
    the verdicts stay."""
    import json

    from helpers import cli_output

    report, _ = report_and_results(priced_run, tmp_path)
    page, problems = loaded(browser, report, open_all=False)
    verdicts = page.locator("p.lead.verdict").all_inner_texts()
    page.select_option("#reference", "kor_Hang")
    shown = json.loads(cli_output(priced_run, "show", "1", "--json", "--reference", "kor_Hang"))
    expected = {(r["vocab"], r["lang"]): r["premium"] for r in shown["records"]
                if r["premium"] is not None}  # a language's own vocabulary has none
    cells = page.evaluate(CELLS)
    assert {(vocab, lang) for lang, vocab, _, _ in cells} == {  # every cell, each once
        (vocab, lang) for vocab in ("shared", "cl100k_base", "o200k_base")
        for lang in ("eng_Latn", "kor_Hang", "rus_Cyrl")} and len(cells) == 9
    for lang, vocab, premium, text in cells:
        assert premium == pytest.approx(expected[(vocab, lang)], abs=5e-4), (lang, vocab)
        assert text == f"{premium:.2f}x"
    assert page.locator(".legend .reference").inner_text() == "Korean"
    assert page.get_attribute("#answer-table", "data-reference") == "kor_Hang"
    assert "than Korean" in page.locator("#said").inner_text()
    assert page.locator("p.lead.verdict").all_inner_texts() == verdicts
    assert problems == []
    page.close()


@pytest.mark.slow
def test_the_results_page_finds_languages_and_hides_tokenizers(browser, priced_run, tmp_path):
    """Issue 71: the search keeps the rows whose name or code holds what is typed; unticking a
    tokenizer hides its column and the median is over the columns left."""
    _, results = report_and_results(priced_run, tmp_path)
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(results.resolve().as_uri())
    visible = "() => Array.from(document.querySelectorAll('#answer-table tbody tr'))" \
        ".filter(row => !row.hidden).map(row => row.getAttribute('data-lang'))"
    assert len(page.evaluate(visible)) == 3
    page.fill("#answer-search", "kor")
    assert page.evaluate(visible) == ["kor_Hang"]
    page.fill("#answer-search", "russ")
    assert page.evaluate(visible) == ["rus_Cyrl"]
    page.fill("#answer-search", "")
    assert len(page.evaluate(visible)) == 3
    median = "() => parseFloat(document.querySelector(" \
        "'#answer-table tr[data-lang=kor_Hang]').cells[2].getAttribute('data-v'))"
    korean = "() => Array.from(document.querySelector('#answer-table tr[data-lang=kor_Hang]')" \
        ".cells).slice(3).map(cell => parseFloat(cell.getAttribute('data-v')))"
    both, premiums = page.evaluate(median), page.evaluate(korean)
    assert both == pytest.approx(sum(premiums) / 2)
    page.locator("details.columns summary").click()
    box = page.locator("input.show-column[value='cl100k_base']")
    box.focus()
    page.keyboard.press("Space")  # by keyboard
    assert not box.is_checked()
    assert page.locator("#answer-table th[data-csv='cl100k_base']").is_hidden()
    assert page.locator("#answer-table tr[data-lang=kor_Hang] td").nth(2).is_hidden()
    assert page.evaluate(median) == pytest.approx(premiums[1]) != pytest.approx(both)
    box.check()
    assert page.evaluate(median) == pytest.approx(both)
    assert errors == []
    page.close()


def priced_by_the_page(page, tokens: str, mix: str, counted_by: str, requests: str):
    page.fill("#bill-tokens", tokens)
    page.fill("#bill-mix", mix)
    page.fill("#bill-requests", requests)
    page.select_option("#bill-counted-by", counted_by)
    page.click("#bill-go")
    return page.evaluate("() => document.getElementById('bill-table').hidden ? null : "
                         "Array.from(document.querySelectorAll('#bill-table tbody tr')).map(row =>"
                         " Array.from(row.cells).map(cell => cell.getAttribute('data-v')))")


@pytest.mark.slow
@pytest.mark.parametrize("which", ["report", "results"])
def test_the_calculator_prices_a_month_as_show_does(browser, priced_run, tmp_path, which):
    """Issue 71: the offline calculator's table is `show --json --bill`'s rows: the models in
    its order, their tokens and cost; bad input says what is wrong, with no table and no NaN."""
    import json

    from helpers import cli_output

    report, results = report_and_results(priced_run, tmp_path)
    if which == "report":
        page, problems = loaded(browser, report, open_all=False)
    else:
        page, problems = browser.new_page(), []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(results.resolve().as_uri())
    page.locator("#bill summary").click()  # folded until asked for
    default = page.evaluate("() => document.getElementById('bill-counted-by').value")
    assert default == "cl100k_base"  # the first priced production tokenizer, as workload_of
    for args in (("3M", "eng_Latn=2,kor_Hang=1", "o200k_base", "1000"),
                 ("2.5k", "", "cl100k_base", "")):
        options = ["--bill", args[0], "--counted-by", args[2]] + (["--mix", args[1]] if args[1] else []) \
            + (["--requests", args[3]] if args[3] else [])
        rows = json.loads(cli_output(priced_run, "show", "1", "--json", *options))["bill"]["rows"]
        found = priced_by_the_page(page, *args)
        assert [r[0] for r in found] == [row["model"] for row in rows]
        for mine, row in zip(found, rows):
            assert mine[1] == row["tokenizer"]
            assert abs(float(mine[2]) - row["tokens"]) <= max(1, 1e-6 * row["tokens"])
            assert float(mine[3]) == pytest.approx(row["cost"], abs=0.01)
            assert float(mine[4]) == pytest.approx(row["vs_cheapest"], rel=1e-4)
        said = page.locator("#bill-said").inner_text()
        assert said.startswith("For ") and rows[0]["model"] in said and "show --bill" in said
    priced_by_the_page(page, "3M", "eng_Latn=2,kor_Hang=1", "o200k_base", "")
    assert "3,000,000 tokens a month of English as o200k_base counts it, 67% English, 33% Korean" \
        in page.locator("#bill-said").inner_text()
    for bad, message in ((("lots", "", "cl100k_base", ""), "positive amount"),
                         (("1M", "eng_Latn=-1", "cl100k_base", ""), "0 or more"),
                         (("1M", "xx_Latn=1", "cl100k_base", ""), "not a language"),
                         (("1M", "", "cl100k_base", "-5"), "positive amount")):
        assert priced_by_the_page(page, *bad) is None, bad
        said = page.locator("#bill-said").inner_text()
        assert message in said and "NaN" not in said
        assert "NaN" not in page.locator("#bill").inner_text()
    assert problems == []
    page.close()
