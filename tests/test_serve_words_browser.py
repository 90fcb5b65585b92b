"""The service in the user's words (issue 71, item 7), in headless Chromium, as a person meets
it: the run form asks first what they want, measuring needs no size and `none` trains
nothing; the page says "Starting…" the moment the button is pressed, before the server has
answered; the watch page shows the whole run's share done, for how long it has run and its time
left, and each job in words; the home page's sample starts a run in one click; the playground
puts the tokenizers side by side, and writes a token's bytes as the terminal does."""

from __future__ import annotations

import re

import pytest
from test_serve_browser import watched
from test_serve_words import PARTIAL_TEXT

from helpers import RunProcess, Server, make_served_db

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

WAIT_MS = 120_000  # a bound against a hang, never a pace: each wait ends on what the page shows


def complete(client, run_id: int) -> dict:
    """The run's document once complete (a long poll: no pace of its own)."""
    after = None
    while True:
        answer = client.get(f"/api/runs/{run_id}", params=None if after is None else
                            {"after": after, "wait": 30})
        body = answer.json()
        if body["status"] != "running":
            return body
        after = answer.headers["Analyzer-Changes"]


@pytest.mark.slow
def test_the_form_s_first_question_none_and_the_starting_state(browser, tmp_path):
    server = Server(make_served_db(tmp_path, run=False))
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/runs/new", wait_until="load")
        start = page.get_by_role("button", name="Start the run")
        page.wait_for_selector("#new-run button[type=submit]:not([disabled])")
        # The first control is the question; measuring (the default here) shows no size.
        first = page.evaluate("() => document.querySelector('#new-run input, #new-run select')"
                              ".getAttribute('name')")
        assert first == "goal"
        assert page.get_by_label("Measure production tokenizers").is_checked()
        sizes = page.locator("#setting-sizes")
        assert sizes.is_hidden() and page.locator("#setting-tokenizers").is_visible()
        page.get_by_label("Train vocabularies").check()
        assert sizes.is_visible() and page.locator("#setting-tokenizers").is_hidden()
        assert sizes.input_value() == ""  # nothing to train until a size is given

        # Training with "none": nothing to train, said in words at the sizes, nothing started.
        sizes.fill("none")
        start.click()
        page.wait_for_selector("#setting-sizes-error:not([hidden])")
        said = page.inner_text("#setting-sizes-error")
        assert "nothing to measure" in said and "Input should be" not in said

        # Both, sizes "none": the tokenizer alone is measured. The POST is held until the
        # page has been read: "Starting…" is there before any answer, the button disabled.
        page.get_by_label("Both").check()
        page.get_by_label("cl100k_base", exact=True).check()
        held = []
        page.route("**/api/runs", lambda route: held.append(route))
        start.click()
        page.wait_for_function("() => document.getElementById('form-status').textContent"
                               ".startsWith('Starting…')")
        assert held and start.is_disabled()
        assert "checking the settings" in page.inner_text("#form-status")
        # A server slow to answer: the page says how long it has waited (it waits for the
        # words, never for a time of its own).
        page.wait_for_function("() => /^Still starting, \\d+ s so far/.test("
                               "document.getElementById('form-status').textContent)")
        held[0].continue_()
        page.wait_for_url("**/runs/1")
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert complete(client, 1)["sizes"] == []
            assert [v["scope"] for v in client.get("/api/runs/1/vocabularies").json()] == \
                ["cl100k_base"]

        # Measuring, the default: no size asked for, none sent.
        page.unroute("**/api/runs")
        page.goto(server.url + "/runs/new", wait_until="load")
        page.wait_for_selector("#new-run button[type=submit]:not([disabled])")
        page.get_by_label("cl100k_base", exact=True).check()
        start.click()
        page.wait_for_url("**/runs/2")
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert complete(client, 2)["sizes"] == []
        page.close()
        assert all(re.search(r"\b422\b", problem) or "Failed to load resource" in problem
                   for problem in problems), problems
    finally:
        server.stop()


@pytest.mark.slow
def test_the_watch_page_shows_the_whole_run_its_time_left_and_each_job_in_words(browser, tmp_path):
    """One training stalls (ANALYZER_TEST_STALL_ONCE) and the others finish: the page then
    holds still at 3 of 5 jobs done, whatever the machine's speed."""
    marker = tmp_path / "stall"
    server = Server(make_served_db(tmp_path, run=False), env={"ANALYZER_TEST_STALL_ONCE": str(marker)})
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            run = client.post("/api/runs", json={"sizes": [300], "jobs": 2,
                                                 "tokenizers": ["cl100k_base"]}).json()["run"]
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        # Every share the page shows, as it shows it (watched from before its script runs).
        page.add_init_script("""window.shares = [];
            document.addEventListener('DOMContentLoaded', () => {
                const overall = document.getElementById('overall');
                new MutationObserver(() => window.shares.push(Number(overall.dataset.share)))
                    .observe(overall, {attributes: true, attributeFilter: ['data-share']}); });""")
        page.goto(server.url + f"/runs/{run}", wait_until="load")
        page.wait_for_function("() => document.getElementById('overall').dataset.done === '3'")
        overall = page.locator("#overall")
        assert overall.get_attribute("data-total") == "5"  # shared, 3 languages' own, cl100k_base
        assert re.fullmatch(r"3 of 5 jobs done \(\d+%\)", page.inner_text("#overall-said"))
        assert 0 < float(page.get_attribute("#overall-bar", "value") or 0) < 1
        assert re.fullmatch(r"running for \d+( min \d+)? s", page.inner_text("#elapsed"))
        assert re.fullmatch(r"about \d+.* left", page.inner_text("#left"))  # a rate, once jobs end
        lines = page.locator("#progress li").all_inner_texts()
        assert "English (eng_Latn): done" in lines and "Korean (kor_Hang): done" in lines
        assert any(re.fullmatch(r"\S.*: training, [\d,]+ of [\d,]+ merges", line) for line in lines)
        shares = page.evaluate("() => window.shares")
        assert shares and shares == sorted(shares), shares
        # It leads: the whole run before the jobs' lines and the run's settings.
        html = page.content()
        assert html.index("id=\"overall\"") < html.index("id=\"progress\"") < html.index("Corpus")
        page.click("#interrupt")
        page.wait_for_selector("#run-error:not([hidden])")
        page.close()
        assert problems == []
    finally:
        server.stop()


@pytest.mark.slow
def test_a_run_of_a_command_line_is_said_to_run_elsewhere(browser, tmp_path):
    """The server knows the progress of the runs it runs; of one `analyzer run` runs beside
    it, the watch page says where its progress is, never "Starting…" for ever."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db)
    command = RunProcess("run", "--vocab", "300", "--jobs", "1", "--no-report", "--db", str(db),
                         env={"ANALYZER_TEST_STALL": "1"})  # it stays running
    try:
        command.wait_for("training")
        with httpx.Client(base_url=server.url, timeout=60) as client:
            body = client.get("/api/runs/1").json()
            assert body["status"] == "running" and body["overall"] is None
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/runs/1", wait_until="load")
        page.wait_for_function("() => document.getElementById('overall-said').textContent"
                               ".startsWith('Running in another process')")
        assert page.locator("#overall-bar").is_hidden() and page.locator("#times").is_hidden()
        page.close()
        assert problems == []
    finally:
        command.kill()
        server.stop()


@pytest.mark.slow
def test_the_home_page_s_sample_starts_a_run_in_one_click(browser, tmp_path):
    from analyzer.serve.pages import SAMPLE_SIZES

    server = Server(tmp_path / "new.db")  # nothing stored yet
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/", wait_until="load")
        assert "How many more tokens" in page.inner_text("#question")
        page.click("#try-sample:not([disabled])")
        page.wait_for_url(re.compile(r".*/(runs|queue)/\d+$"))
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert [c["name"] for c in client.get("/api/corpora").json()] == ["harbour_town"]
            (run,) = client.get("/api/runs").json()
            assert run["corpus"] == "harbour_town" and run["sizes"] == SAMPLE_SIZES
            assert len(run["languages"]) == 12
        page.close()
        assert problems == []
    finally:
        server.stop()


@pytest.mark.slow
def test_the_playground_puts_tokenizers_side_by_side_and_writes_bytes_as_the_terminal(
        browser, tmp_path):
    from analyzer.bpe.readable import marked
    from analyzer.external import resolve_tokenizer

    server = Server(make_served_db(tmp_path, run=False))
    try:
        available = [item["name"] for item in httpx.get(server.url + "/api/tokenizers",
                                                        timeout=60).json() if item["available"]]
        assert "cl100k_base" in available and len(available) >= 2
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/playground", wait_until="load")
        page.wait_for_selector("#results section[data-vocab]")
        for name in available[:3]:
            page.check(f"#tokenizers input[value='{name}']")
        page.locator("#texts textarea").first.fill(PARTIAL_TEXT)
        cl100k = "#results section[data-vocab=cl100k_base]"
        expected = [marked(piece) for _, piece in resolve_tokenizer("cl100k_base").pieces(PARTIAL_TEXT)]
        page.wait_for_function(
            "(n) => { const s = document.querySelector('#results section[data-vocab=cl100k_base]');"
            " return s && s.querySelectorAll('.piece').length === n && document.querySelectorAll("
            "'#results section').length >= 2; }", arg=len(expected))
        assert page.locator(f"{cl100k} .piece").all_inner_texts() == expected
        assert any("‹e0 a4›" in piece for piece in expected)
        assert page.locator("#partial-key").is_visible()

        def boxes():
            return [page.locator("#results section").nth(i).bounding_box() for i in range(2)]

        first, second = boxes()
        assert first["y"] == second["y"] and second["x"] >= first["x"] + first["width"]  # a row
        page.set_viewport_size({"width": 420, "height": 1000})  # a phone: one column
        page.wait_for_function("() => { const s = document.querySelectorAll('#results section');"
                               " return s[1].getBoundingClientRect().top >= "
                               "s[0].getBoundingClientRect().bottom; }")
        first, second = boxes()
        assert second["x"] == first["x"]
        page.close()
        assert problems == []
    finally:
        server.stop()
