"""The service's pages in headless Chromium: the index, a run's report and the playground load
with no script error and no policy violation, the playground counts as you type, and markup
typed in or stored in a corpus stays text."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import HOSTILE, Server, hostile_corpus, make_served_db

pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")


def watched(browser, url: str):
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    origin = "/".join(url.split("/")[:3])  # http://127.0.0.1:PORT
    page.on("request", lambda r: problems.append(f"request: {r.url}")
            if not r.url.startswith((origin, "data:", "blob:")) else None)
    return page, problems


@pytest.mark.slow
def test_the_index_and_a_run_page_load_cleanly(browser, served, tmp_path):
    page, problems = watched(browser, served.url)
    page.goto(served.url + "/", wait_until="load")
    assert page.locator("#runs tbody tr").count() >= 1
    page.click("a[href='/runs/1']")
    page.wait_for_function("() => window.Plotly && document.querySelectorAll('.js-plotly-plot').length"
                           " === document.querySelectorAll('.plotly-graph-div').length")
    drawn = page.evaluate("() => Array.from(document.querySelectorAll('.plotly-graph-div'))"
                          ".every(div => div.querySelectorAll('.main-svg').length > 0)")
    assert drawn
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    page.close()
    assert problems == []


def counts(page) -> dict:
    return page.evaluate("""() => Object.fromEntries(Array.from(
        document.querySelectorAll('#results section')).flatMap(section =>
        Array.from(section.querySelectorAll('tr[data-lang]')).map(row =>
        [section.dataset.vocab + '/' + row.dataset.lang, Number(row.querySelector('.count').textContent)])))""")


@pytest.mark.slow
def test_the_playground_counts_as_you_type_and_keeps_markup_as_text(browser, served, tmp_path):
    page, problems = watched(browser, served.url)
    page.goto(served.url + "/playground", wait_until="load")
    page.wait_for_function("() => document.querySelectorAll('#results tr[data-lang]').length > 0")
    before = counts(page)
    assert before and all(n > 0 for n in before.values())
    page.locator("#texts textarea").first.fill("the cat sat on the mat " * 3)
    page.wait_for_function("(before) => document.querySelector('#results section[data-vocab=shared] "
                           "tr[data-lang=text] .count').textContent !== String(before)",
                           arg=before["shared/text"])
    after = counts(page)
    assert after != before
    page.locator("#tokenizers input[value=cl100k_base]").check()
    page.wait_for_function("() => document.querySelector('#results section[data-vocab=cl100k_base]')")
    for payload in HOSTILE:
        page.locator("#texts textarea").first.fill(payload)
        page.wait_for_function("(text) => Array.from(document.querySelectorAll('#results .pieces'))"
                               ".some(cell => cell.textContent === text)", arg=payload)
    assert page.evaluate("() => document.querySelectorAll('#results script, #results img').length") == 0
    page.locator("#corpus").select_option("tiny")
    page.wait_for_function("() => document.querySelectorAll('#texts textarea').length === 3")
    page.wait_for_function("() => document.querySelectorAll('#results section[data-vocab=shared] "
                           "tr[data-lang]').length === 3")
    page.screenshot(path=str(tmp_path / "playground.png"), full_page=True)
    page.close()
    assert problems == []


@pytest.mark.slow
def test_the_playground_says_it_is_loading_then_what_to_do_without_a_run(browser, tmp_path):
    server = Server(make_served_db(tmp_path, run=False))
    try:
        # Before its script has fetched the lists (here: never, scripts off), the page says so.
        still = browser.new_page(java_script_enabled=False)
        still.goto(server.url + "/playground", wait_until="load")
        assert "Loading" in still.inner_text("#status")
        assert still.inner_text("#run option") == "(loading…)"
        assert still.get_attribute("#controls", "aria-busy") == "true"
        still.close()
        page, problems = watched(browser, server.url)
        page.goto(server.url + "/playground", wait_until="load")
        page.wait_for_selector("#vocabs p.empty")
        assert "analyzer run --vocab 512" in page.inner_text("#vocabs")
        assert page.inner_text("#run option") == "(none)"
        assert page.get_attribute("#controls", "aria-busy") is None
        assert "Loading" not in page.inner_text("#status") + page.inner_text("#tokenizers")
        page.close()
    finally:
        server.stop()
    assert problems == []


@pytest.mark.slow
def test_a_hostile_corpus_stays_inert_in_the_pages(browser, tmp_path):
    from typer.testing import CliRunner

    from analyzer.cli import app

    db = tmp_path / "hostile.db"
    runner = CliRunner()
    name = "x<script>alert(9)<script>"  # no "/" in a name (check_corpus_name)
    assert runner.invoke(app, ["ingest", str(hostile_corpus(tmp_path / "h")), "--name", name,
                               "--db", str(db)]).exit_code == 0
    assert runner.invoke(app, ["run", "--vocab", "300", "--jobs", "1", "--no-report",
                               "--db", str(db)]).exit_code == 0
    server = Server(db)
    try:
        page, problems = watched(browser, server.url)
        page.goto(server.url + "/", wait_until="load")
        assert name in page.locator("body").inner_text()
        page.goto(server.url + "/playground", wait_until="load")
        page.wait_for_function("() => document.querySelectorAll('#corpus option').length === 2")
        page.locator("#corpus").select_option(name)
        page.wait_for_function("() => document.querySelectorAll('#results section[data-vocab=shared] "
                               "tr[data-lang]').length === 2")
        assert page.evaluate("() => document.querySelectorAll('#results script, #results img, "
                             "#texts script').length") == 0
        page.close()
        assert problems == []
    finally:
        server.stop()


@pytest.mark.slow
def test_behind_a_token_a_browser_signs_in_and_uses_the_playground(browser, tmp_path):
    token = "a-browser-token-of-sixteen-or-more"
    server = Server(make_served_db(tmp_path), "--token", token)
    try:
        page, problems = watched(browser, server.url)
        page.goto(server.url + "/playground", wait_until="load")
        assert page.url.startswith(server.url + "/login")  # sent to sign in, not a 401
        page.fill("input[name=token]", "wrong-token-wrong-token")
        page.click("button[type=submit]")
        page.wait_for_selector("[role=alert]")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        page.wait_for_url(server.url + "/playground")
        page.wait_for_function("() => document.querySelectorAll('#results tr[data-lang]').length > 0")
        assert all(n > 0 for n in counts(page).values())
        page.close()
    finally:
        server.stop()
    # the wrong token's page answered 401: the browser's console says so, nothing else
    assert [p for p in problems if "401" not in p] == []


PLAYGROUND = Path(__file__).resolve().parents[1] / "docs" / "playground.png"
PLAYGROUND_SHOWN = PLAYGROUND.with_suffix(".png.txt")
"""The README's screenshot of the playground, and what the page shows in it (its columns, each
language's count), written together by the test below."""


@pytest.mark.slow
def test_the_readme_playground_screenshot_is_the_page_as_it_is(browser, tmp_path):
    """As the README's report screenshot (tests/test_docs.py): made by this test from the real
    page, on the sample corpus under a run's shared vocabulary and o200k_base; the test fails
    when the page no longer shows what the screenshot does. Make it anew with
    `ANALYZER_WRITE_SCREENSHOTS=1 python -m pytest tests/test_serve_browser.py -k screenshot`."""
    import os

    from helpers import cli_output, resolve_or_skip

    resolve_or_skip("o200k_base")
    db = tmp_path / "analyzer.db"
    cli_output(db, "ingest")
    cli_output(db, "run", "--vocab", "512", "-t", "o200k_base", "--no-report", "--jobs", "1")
    server = Server(db)
    try:
        page = browser.new_page(viewport={"width": 1200, "height": 1020})
        page.goto(server.url + "/playground", wait_until="load")
        page.locator("#corpus").select_option("harbour_town")  # a unit in its twelve languages
        page.locator("#tokenizers input[value=o200k_base]").check()
        page.wait_for_function("() => document.querySelectorAll("
                               "'#results section[data-vocab=o200k_base] tr[data-lang]').length"
                               " === 12 && document.querySelectorAll("
                               "'#results section[data-vocab=shared] tr[data-lang]').length === 12")
        shown = "\n".join(f"{vocab}/{lang} {n}" for vocab, lang, n in page.evaluate(
            """() => Array.from(document.querySelectorAll('#results section[data-vocab=shared], '
                 + '#results section[data-vocab=o200k_base]')).flatMap(section =>
                 Array.from(section.querySelectorAll('tr[data-lang]')).map(row =>
                   [section.dataset.vocab, row.dataset.lang,
                    row.querySelector('.count').textContent]))""")) + "\n"
        if os.environ.get("ANALYZER_WRITE_SCREENSHOTS"):  # the results, side by side
            top = page.locator("#results").bounding_box()["y"] - 16  # type: ignore[index]
            page.screenshot(path=str(PLAYGROUND), full_page=True,
                            clip={"x": 0, "y": top, "width": 1200, "height": 1020})
            PLAYGROUND_SHOWN.write_text(shown, encoding="utf-8")
        page.close()
    finally:
        server.stop()
    assert PLAYGROUND_SHOWN.read_text(encoding="utf-8") == shown, (
        "the playground changed: make the README's screenshot anew (see this test's docstring)")
