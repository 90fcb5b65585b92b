"""The report's details of issue 71, item 9: the box plot of unit premiums on a log axis for
every tokenizer, within two screens; provenance that lists training settings only for a run
that trained; Terms that define only the words the page uses."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from analyzer.report.figures import STEADY_HEIGHT, UnitSpread, box_stats, unit_premiums
from analyzer.report.glossary import TERMS, anchor
from analyzer.report.page import build_page
from analyzer.store import open_db
from helpers import SAMPLE_CORPUS, cli_output, resolve_or_skip

TRAINING_ROWS = ("tie-break, min pair count", "unit weights", "parity-aware", "sizes")


def spreads(languages: list[str], names: list[str]) -> list[UnitSpread]:
    rng = np.random.default_rng(0)
    found = []
    for number, name in enumerate(names):
        premium = {lang: 1 + index / 10 + number for index, lang in enumerate(languages)}
        rows = pd.DataFrame({"premium": premium}).assign(
            premium_ci_low=lambda f: f["premium"] * 0.95,
            premium_ci_high=lambda f: f["premium"] * 1.05,
            unit_premium=lambda f: f["premium"] * 1.01,
            unit_premium_ci_low=lambda f: f["premium"] * 0.96,
            unit_premium_ci_high=lambda f: f["premium"] * 1.06)
        found.append(UnitSpread(name, rows, {lang: premium[lang] * rng.lognormal(0, 0.2, 50)
                                             for lang in languages}))
    return found


@pytest.mark.parametrize("count", [3, 58, 204])
def test_the_box_plot_shows_every_tokenizer_on_a_log_axis_within_two_screens(count):
    languages = [f"l{index:03d}_Latn" for index in range(count)]
    view = SimpleNamespace(name=lambda lang: lang, primary=("gpt2", 50257), pivot="l000_Latn")
    names = ["gpt2", "cl100k_base", "o200k_base"]
    figure = unit_premiums(view, spreads(languages, names))
    assert figure.layout.xaxis.type == "log"
    assert figure.layout.height <= STEADY_HEIGHT
    boxes = [trace for trace in figure.data if trace.type == "box"]
    assert {trace.name for trace in boxes} == set(names)
    assert len(boxes) == count * len(names)  # a box per language and tokenizer (the filter's)
    # every language a button away: the pages of the axis cover them all, in order
    ranges = [figure.layout.yaxis.range] + [
        button.args[0]["yaxis.range"] for menu in figure.layout.updatemenus
        for button in menu.buttons]
    covered = set().union(*(range(round(low + 0.5), round(high + 0.5)) for high, low in ranges))
    assert covered == set(range(count))


def test_a_box_is_tukey_s_over_the_ratios_a_log_axis_can_draw():
    stats = box_stats(np.array([0.0, np.nan, np.inf, 1.0, 2.0, 3.0, 4.0, 100.0]))
    assert stats == {"q1": 2.0, "median": 3.0, "q3": 4.0, "lowerfence": 1.0, "upperfence": 4.0}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The sample corpus: run 1 measures two tokenizers and trains nothing; run 2 trains a
    shared vocabulary beside one tokenizer."""
    resolve_or_skip("cl100k_base")
    resolve_or_skip("o200k_base")
    db = tmp_path_factory.mktemp("details") / "a.db"
    cli_output(db, "ingest", SAMPLE_CORPUS)
    cli_output(db, "run", "--tokenizer", "cl100k_base", "--tokenizer", "o200k_base", "--jobs",
               "1", "--no-report")
    cli_output(db, "run", "--vocab", "300", "--tokenizer", "cl100k_base", "--jobs", "1",
               "--no-report")
    return open_db(db)


def test_the_page_s_box_plot_has_every_tokenizer_of_the_run(two_runs):
    figure = next(f for f in build_page(two_runs, 1).figures
                  if f.layout.title.text.startswith("Premium unit by unit"))
    assert {t.name for t in figure.data if t.type == "box"} == {"cl100k_base", "o200k_base"}
    assert figure.layout.xaxis.type == "log"
    figure = next(f for f in build_page(two_runs, 2).figures
                  if f.layout.title.text.startswith("Premium unit by unit"))
    assert {t.name for t in figure.data if t.type == "box"} == {"shared 300", "cl100k_base"}


def provenance_rows(html: str) -> list[str]:
    start = html.index("<section id='provenance'")
    return re.findall(r"<tr><th>([^<]+)</th>", html[start:html.index("</section>", start)])


def test_only_a_run_that_trained_lists_training_settings(two_runs):
    measured = provenance_rows(build_page(two_runs, 1).html)
    trained = provenance_rows(build_page(two_runs, 2).html)
    assert not set(TRAINING_ROWS) & set(measured), measured
    assert set(TRAINING_ROWS) <= set(trained), trained


@pytest.mark.parametrize("run_id", [1, 2])
def test_terms_defines_exactly_the_words_the_page_uses(two_runs, run_id):
    html = build_page(two_runs, run_id).html
    start = html.index("<section id='terms'")
    rest = html[:start] + html[html.index("</section>", start):]
    defined = set(re.findall(r"<dt id='([^']+)'", html[start:]))
    used = {anchor(term) for term in TERMS
            if re.search(rf"(?<![\w>-]){re.escape(term)}(?![\w<-])", rest, re.IGNORECASE)}
    assert defined == used
    assert "term-premium" in defined
    if run_id == 1:
        assert not {"term-parity-aware", "term-utilisation", "term-superbpe"} & defined


@pytest.mark.slow
def test_the_box_plot_s_buttons_page_through_every_language_in_a_browser(browser, tmp_path):
    """Drawn by Chromium: at most two screens tall at 204 languages, on a log axis, and each
    button brings its languages into view."""
    import plotly.io as pio

    from analyzer.report.files import ensure_plotlyjs, plotly_file_name

    languages = [f"l{index:03d}_Latn" for index in range(204)]
    view = SimpleNamespace(name=lambda lang: lang, primary=("gpt2", 50257), pivot="l000_Latn")
    figure = unit_premiums(view, spreads(languages, ["gpt2", "cl100k_base", "o200k_base"]))
    ensure_plotlyjs(tmp_path)
    (tmp_path / "box.html").write_text(
        f"<!DOCTYPE html><html><head><script src='{plotly_file_name()}'></script></head><body>"
        + pio.to_html(figure, full_html=False, include_plotlyjs=False, div_id="box")
        + "</body></html>", encoding="utf-8")
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto((tmp_path / "box.html").as_uri(), wait_until="load")
    page.wait_for_function("() => document.getElementById('box').layout")
    assert page.evaluate("() => document.getElementById('box').getBoundingClientRect().height") \
        <= STEADY_HEIGHT
    assert page.evaluate("() => document.getElementById('box')._fullLayout.xaxis.type") == "log"
    ticks = "() => Array.from(document.querySelectorAll('#box .ytick text')).map(t => t.textContent)"
    first = page.evaluate(ticks)
    assert "l000_Latn" not in first or "l203_Latn" not in first
    buttons = page.locator("#box .updatemenu-button")
    seen = set(first)
    for index in range(1, buttons.count()):
        buttons.nth(index).click()
        page.wait_for_timeout(200)
        seen |= set(page.evaluate(ticks))
    page.close()
    assert set(languages) <= seen
