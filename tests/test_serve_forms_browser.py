"""The run form filled in from its labels alone (issue 52), in headless Chromium, as a person
reads it: a run of production tokenizers only, and a run with two mistakes, each shown at its
field at once; the playground starts with well-known tokenizers ticked and one's own text is
"your text", with no premium against itself."""

from __future__ import annotations

import re

import pytest
from test_serve_browser import watched

from helpers import Server, make_served_db

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

WAIT_MS = 120_000  # a bound against a hang, never a pace: each wait ends on what the page shows


@pytest.mark.slow
def test_the_run_form_filled_in_from_its_labels(browser, tmp_path):
    server = Server(make_served_db(tmp_path, run=False))
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/runs/new", wait_until="load")
        start = page.get_by_role("button", name="Start the run")

        # Two mistakes: both refused at once, each beside its control.
        page.check("#goal input[value=both]")  # the form's first question
        sizes = page.get_by_label("Vocabulary sizes", exact=True)
        languages = page.get_by_label("Languages", exact=True)
        sizes.fill("100")
        languages.fill("eng_Latn, xyz")
        start.click()
        page.wait_for_selector("#setting-sizes-error:not([hidden])")
        page.wait_for_selector("#setting-languages-error:not([hidden])")
        assert "256" in page.inner_text("#setting-sizes-error")
        assert "xyz" in page.inner_text("#setting-languages-error")
        assert sizes.get_attribute("aria-invalid") == languages.get_attribute("aria-invalid") == "true"
        assert page.locator("#form-error").is_hidden()
        assert page.evaluate("() => document.activeElement.id") == "setting-sizes"  # the first

        # A tokenizer the text entry names, refused at the tokenizers (offline: not found).
        sizes.fill("300")
        languages.fill("")
        other = page.get_by_label("Other production tokenizers", exact=True)
        other.fill("hf:nobody/no-such-tokenizer")
        start.click()
        page.wait_for_selector("#setting-tokenizers-error:not([hidden])")
        assert "hf:nobody/no-such-tokenizer" in page.inner_text("#setting-tokenizers-error")
        assert other.get_attribute("aria-invalid") == "true"
        assert page.locator("#setting-sizes-error").is_hidden()

        # Production tokenizers only: no size, one tokenizer ticked.
        other.fill("")
        page.check("#goal input[value=measure]")  # the sizes hidden, and not sent
        page.get_by_label("cl100k_base", exact=True).check()
        start.click()
        page.wait_for_url("**/runs/1")
        page.wait_for_function("() => document.querySelectorAll('.plotly-graph-div').length > 0 "
                               "&& window.Plotly")
        page.goto(server.url + "/", wait_until="load")
        head = page.locator("#runs thead th").all_inner_texts()
        row = dict(zip(head, page.locator("#runs tbody tr").first.locator("td").all_inner_texts(),
                       strict=False))
        assert row["status"] == "complete" and row["corpus"] == "tiny"
        assert row["sizes"] == "none" and row["tokenizers"] == "cl100k_base"
        page.close()
        # The refusals the script logs as failed requests are the answers themselves.
        assert all(re.search(r"\b(422|404)\b", problem) or "Failed to load resource" in problem
                   for problem in problems), problems
        with httpx.Client(base_url=server.url) as client:
            (run,) = client.get("/api/runs").json()
            assert run["sizes"] == [] and run["status"] == "complete"
            scopes = [v["scope"] for v in client.get("/api/runs/1/vocabularies").json()]
            assert scopes == ["cl100k_base"]
    finally:
        server.stop()


@pytest.mark.slow
def test_the_playground_starts_with_tokenizers_ticked_and_your_text(browser, tmp_path):
    from analyzer.serve.pages import PLAYGROUND_TOKENIZERS

    server = Server(make_served_db(tmp_path, run=False))  # no run: the tokenizers alone count
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/playground", wait_until="load")
        page.wait_for_selector("#results section[data-vocab]")
        ticked = page.evaluate("() => Array.from(document.querySelectorAll('#tokenizers "
                               "input:checked')).map(box => box.value)")
        available = [item["name"] for item in httpx.get(server.url + "/api/tokenizers",
                                                        timeout=60).json() if item["available"]]
        assert ticked == [name for name in available if name in PLAYGROUND_TOKENIZERS]
        assert ticked  # cl100k_base, at least, is installed with the test extra
        page.wait_for_function("(n) => document.querySelectorAll('#results section').length === n",
                               arg=len(ticked))
        section = page.locator("#results section").first
        assert section.locator("th").all_inner_texts() == ["language", "tokens"]
        assert section.locator("tr[data-lang] td").first.inner_text() == "your text"
        assert page.locator("#texts .lang").all_inner_texts() == ["your text"]
        assert "pivot" not in page.inner_text("#status")
        # A corpus's unit: languages beside each other, and their premiums against the pivot.
        page.locator("#corpus").select_option("tiny")
        page.wait_for_function("() => document.querySelectorAll('#results section')[0]"
                               ".querySelectorAll('tr[data-lang]').length === 3")
        assert "premium vs eng_Latn" in page.locator("#results section").first.locator("th").all_inner_texts()
        page.close()
        assert problems == []
    finally:
        server.stop()
