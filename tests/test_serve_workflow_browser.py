"""The service as a person with a browser uses it (issue 43), in headless Chromium: from an
empty database, bring a corpus through the upload form, start a run from the new-run form,
watch it finish, read its report; refusals are shown in the page beside what to change; a run
asked for while another is in progress shows its place in the queue and can be cancelled, and
the run in progress shows its progress and can be interrupted."""

from __future__ import annotations

import zipfile

import pytest
from test_serve_browser import watched

from helpers import TINY, Server, make_served_db, wait_for_progress

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

WAIT_MS = 120_000  # a bound against a hang, never a pace: each wait ends on what the page shows


def corpus_zip(path, **changed: str):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for lang, lines in TINY.items():
            archive.writestr(f"animals/{lang}.txt", changed.get(lang, "\n".join(lines) + "\n"))
    return path


@pytest.mark.slow
def test_bring_a_corpus_start_a_run_watch_it_and_read_its_report(browser, tmp_path):
    server = Server(tmp_path / "new.db")  # no database yet: the server makes it
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/", wait_until="load")
        page.click("#first-step a[href='/corpora/new']")
        page.set_input_files("#upload-file", str(corpus_zip(tmp_path / "animals.zip")))
        page.click("#upload button[type=submit]")
        page.wait_for_selector("#stored:not([hidden])")
        assert "Stored corpus animals: 3 languages × 6 units" in page.inner_text("#stored")
        assert page.locator("#stored tbody tr").count() == 3

        page.click("#start-run")
        page.wait_for_url("**/runs/new?corpus=animals")
        assert page.input_value("#setting-corpus") == "animals"
        page.check("#goal input[value=both]")  # train, and measure cl100k_base
        page.fill("#setting-sizes", "280, 300")
        page.uncheck("#setting-per_language")
        page.click("details summary")
        page.fill("#setting-jobs", "1")
        page.check("#setting-tokenizers input[value=cl100k_base]")
        page.click("#new-run button[type=submit]")
        page.wait_for_url("**/runs/1")
        # The progress page follows the run, then shows the report once it is complete.
        page.wait_for_function("() => document.querySelectorAll('.plotly-graph-div').length > 0 "
                               "&& window.Plotly")
        assert "animals" in page.content()
        page.goto(server.url + "/", wait_until="load")
        assert page.inner_text("#runs tbody tr td:nth-child(3)") == "complete"
        page.close()
        assert problems == []
    finally:
        code, _, stderr = server.stop()
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_a_form_cannot_be_sent_before_its_script_runs(browser, tmp_path):
    """A click on "Bring it" before the page's script had attached its handler submitted the
    form natively (the page reloaded, the file lost, nothing stored): a CI run waited 120 s
    for the result. Each script-driven button comes disabled and the script enables it; here
    the script is held back until the button has been seen disabled."""
    server = Server(tmp_path / "new.db")
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        held = []
        page.route("**/static/workflow.js", lambda route: held.append(route))  # released below
        page.goto(server.url + "/corpora/new", wait_until="commit")
        button = page.locator("#upload button[type=submit]")
        button.wait_for(state="attached")
        assert button.is_disabled()
        while not held:  # the script asked for (the parser reaches it after the form)
            page.wait_for_timeout(10)
        held[0].continue_()
        page.set_input_files("#upload-file", str(corpus_zip(tmp_path / "animals.zip")))
        button.click()  # waits for the button to be enabled: the handler is attached
        page.wait_for_selector("#stored:not([hidden])")
        assert "Stored corpus animals" in page.inner_text("#stored")
        page.close()
        assert problems == []
    finally:
        server.stop()


@pytest.mark.slow
def test_without_javascript_the_page_says_it_needs_it(browser, tmp_path):
    """The buttons stay disabled without the script: the page says why, beside them."""
    server = Server(tmp_path / "new.db")
    try:
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(server.url + "/corpora/new", wait_until="load")
        assert page.locator("#upload button[type=submit]").is_disabled()
        assert "allow JavaScript" in page.inner_text("body")
        context.close()
    finally:
        server.stop()


@pytest.mark.slow
def test_refusals_are_shown_in_the_page_where_they_can_be_acted_on(browser, tmp_path):
    db = make_served_db(tmp_path, run=False)
    server = Server(db)
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/corpora/new", wait_until="load")
        broken = corpus_zip(tmp_path / "broken.zip", eng_Latn="one line only\n")
        page.set_input_files("#upload-file", str(broken))
        page.click("#upload button[type=submit]")
        page.wait_for_selector("#form-error:not([hidden])")
        assert "misaligned" in page.inner_text("#form-error")
        assert page.locator("#stored").is_hidden()

        page.goto(server.url + "/runs/new", wait_until="load")
        page.check("#goal input[value=train]")  # the form's first question
        page.fill("#setting-sizes", "100")
        page.click("#new-run button[type=submit]")
        page.wait_for_selector("#setting-sizes-error:not([hidden])")
        assert "256" in page.inner_text("#setting-sizes-error")
        assert page.get_attribute("#setting-sizes", "aria-invalid") == "true"
        page.fill("#setting-sizes", "300")
        page.click("details summary")  # "More settings"
        page.fill("#setting-holdout", "2")
        page.click("details summary")  # closed again: a refusal there opens it
        page.click("#new-run button[type=submit]")
        page.wait_for_selector("#setting-holdout-error:not([hidden])")
        assert "holdout" in page.inner_text("#setting-holdout-error")
        assert page.locator("#setting-sizes-error").is_hidden()
        assert page.locator("details").first.get_attribute("open") is not None
        page.close()
        # The refusals the script logs as failed requests are the answers themselves (422).
        assert all("422" in problem or "Failed to load resource" in problem for problem in problems), problems
        with httpx.Client(base_url=server.url) as client:
            assert client.get("/api/runs").json() == []
            assert [c["name"] for c in client.get("/api/corpora").json()] == ["tiny"]
    finally:
        server.stop()


@pytest.mark.slow
def test_a_queued_run_shows_its_place_and_is_cancelled_and_a_run_is_interrupted(browser, tmp_path):
    db = make_served_db(tmp_path, run=False)
    server = Server(db, env={"ANALYZER_TEST_STALL": "1"})  # trainings wait once they report
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            running = client.post("/api/runs", json={"sizes": [60000], "jobs": 1,
                                                     "per_language": False}).json()["run"]
            wait_for_progress(client, running)
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/runs/new", wait_until="load")
        page.check("#goal input[value=train]")  # the form's first question
        page.fill("#setting-sizes", "300")
        page.click("#new-run button[type=submit]")
        page.wait_for_url("**/queue/1")
        page.wait_for_function("() => document.getElementById('queue-status').textContent"
                               " === 'waiting: number 1 in the queue'")
        page.goto(server.url + "/", wait_until="load")
        assert page.inner_text("#queue tbody tr td:nth-child(4)") == "1"
        page.goto(server.url + "/queue/1", wait_until="load")
        page.click("#cancel")
        page.wait_for_function("() => document.getElementById('queue-status').textContent === 'cancelled'")

        page.goto(server.url + f"/runs/{running}", wait_until="load")
        page.wait_for_selector("#progress li")
        assert "training" in page.inner_text("#progress")
        page.click("#interrupt")
        page.wait_for_selector("#run-error:not([hidden])")
        assert page.inner_text("#run-status") == "interrupted"
        assert "SIGTERM" in page.inner_text("#run-error")
        page.close()
        assert problems == []
    finally:
        server.stop()


@pytest.mark.slow
def test_behind_a_token_a_browser_signs_in_then_brings_a_corpus_and_runs_it(
        browser, tmp_path):
    """The pages' requests (an upload's multipart POST, a run's JSON POST) carry the session
    cookie from the sign-in page and come from the server's own origin, so they pass."""
    token = "a-token-of-sixteen-or-more"
    server = Server(tmp_path / "team.db", "--token", token)
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/corpora/new", wait_until="load")
        page.wait_for_url("**/login?next=%2Fcorpora%2Fnew")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        page.wait_for_url("**/corpora/new")
        page.set_input_files("#upload-file", str(corpus_zip(tmp_path / "animals.zip")))
        page.click("#upload button[type=submit]")
        page.wait_for_selector("#stored:not([hidden])")
        page.click("#start-run")
        page.check("#goal input[value=train]")  # the form's first question
        page.fill("#setting-sizes", "280")
        page.uncheck("#setting-per_language")
        page.click("#new-run button[type=submit]")
        page.wait_for_url("**/runs/1")
        page.wait_for_function("() => document.querySelectorAll('.plotly-graph-div').length > 0")
        page.close()
        assert problems == []
        assert httpx.get(server.url + "/api/corpora").status_code == 401  # no cookie, no bearer
    finally:
        server.stop()


@pytest.mark.slow
def test_a_number_field_holding_no_number_is_refused_at_that_field(browser, tmp_path):
    """Issue 50, item 12: "Infinity" or "abc" in a number field was dropped (a number input
    gives its script "" for them) and the run queued with the default; an unknown train_on
    was shown at the top of the form. Each is said at its own field, and nothing starts."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db)
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/runs/new", wait_until="load")
        page.check("#goal input[value=train]")  # the form's first question
        page.fill("#setting-sizes", "300")
        page.click("details summary")  # "More settings"
        for field, typed, said in (("holdout", "Infinity", "finite number"),
                                   ("jobs", "abc", "valid integer"),
                                   ("target", "Infinity", "finite number")):
            page.fill(f"#setting-{field}", typed)
            page.click("#new-run button[type=submit]")
            page.wait_for_selector(f"#setting-{field}-error:not([hidden])")
            assert said in page.inner_text(f"#setting-{field}-error"), field
            assert page.get_attribute(f"#setting-{field}", "aria-invalid") == "true"
            assert page.locator("#form-error").is_hidden()
            page.fill(f"#setting-{field}", "")
        page.fill("#setting-train_on", "nope")
        page.click("#new-run button[type=submit]")
        page.wait_for_selector("#setting-train_on-error:not([hidden])")
        assert "no training source named 'nope'" in page.inner_text("#setting-train_on-error")
        assert page.locator("#form-error").is_hidden()
        page.close()
        assert all("422" in problem or "404" in problem or "Failed to load resource" in problem
                   for problem in problems), problems
        with httpx.Client(base_url=server.url) as client:
            assert client.get("/api/runs").json() == [] and client.get("/api/queue").json() == []
    finally:
        server.stop()
