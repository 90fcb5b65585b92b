"""The service in the user's words (issue 71, item 7), what the pages are made of: the run
form's first question and its empty sizes; a run's progress as the share of the whole run, its
time left and each job's line in words, with as many jobs as the run reports; the home page's
question and its sample; the playground's pieces written as the terminal writes a token's
bytes. (The pages themselves, in Chromium: test_serve_words_browser.py.)"""

from __future__ import annotations

import re

import pytest

from helpers import make_served_db, page_data_of

pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

PARTIAL_TEXT = "क्षत्रिय"
"""A Hindi word cl100k_base cuts inside its characters (`‹e0 a4›`, `‹b7›`)."""


@pytest.fixture
def app_client(tmp_path):
    from fastapi.testclient import TestClient

    from analyzer.serve.app import create_app

    db = make_served_db(tmp_path, run=False)
    with TestClient(create_app(db), base_url="http://127.0.0.1") as client:
        yield client


def test_the_form_asks_what_the_person_wants_before_any_setting(app_client):
    from analyzer.serve.settings_form import GOALS

    page = app_client.get("/runs/new").text
    form = re.search(r"<form id='new-run'.*?</form>", page, re.S).group(0)
    goals = re.findall(r"<input type='radio' name='goal' value='(\w+)'( checked)?", form)
    assert [value for value, _ in goals] == [value for value, _, _ in GOALS]
    assert [value for value, checked in goals if checked] == ["measure"]  # cl100k_base is here
    # The question first, then the tokenizers, before the corpus and the sizes.
    assert form.index("id='goal'") < form.index("data-for='tokenizers'") \
        < form.index("data-for='corpus'") < form.index("data-for='sizes'")
    sizes = re.search(r"<input type='text' [^>]*id='setting-sizes'[^>]*>", form).group(0)
    assert "value=''" in sizes and "placeholder='e.g. 512, 4096'" in sizes  # nothing trained
    # Shown for the goals they belong to; labels in words, the setting's name in its help.
    assert "data-for='sizes' data-goals='train both'" in form
    assert "data-for='tokenizers' data-goals='measure both'" in form
    assert re.search(r"<label id='setting-sizes-label' for='setting-sizes'>Vocabulary sizes</label> "
                     r"<input", form)


def test_without_a_production_tokenizer_the_form_starts_at_training():
    from analyzer.serve.api import RunRequest
    from analyzer.serve.settings_form import settings_form

    form = settings_form(RunRequest, corpora=["tiny"], tokenizers={"llama3": False})
    assert re.search(r"value='train' checked", form) and "value='measure' checked" not in form


def test_a_run_s_progress_is_its_share_of_the_whole_with_words_for_each_job():
    from analyzer.serve.progress import RunProgress

    progress = RunProgress(jobs=4, began=0.0)
    names = {"eng_Latn": "English", "tur_Latn": "Turkish"}
    assert progress.document(names, now=1.0)["left"] is None  # nothing yet: estimating
    shares = []
    steps = [("source web", "read", 10, 100), ("eng_Latn", "train", 448, 3840),
             ("eng_Latn", "train", 3840, 3840), ("eng_Latn", "count", 0, 1),
             ("eng_Latn", "done", 1, 1), ("tur_Latn", "count", 0, 1)]
    for second, step in enumerate(steps, start=2):
        progress.step(*step, now=float(second))
        shares.append(progress.share())
    assert shares == sorted(shares) and 0 < shares[-1] < 1
    said = progress.document(names, now=10.0)
    assert said["total"] == 4 and said["done"] == 1  # the source read is no job
    assert said["elapsed"] == 10.0 and said["left"] is not None and said["left"] > 0
    assert [line["said"] for line in said["lines"]] == [
        "source web: reading, 10 of 100 bytes",
        "English (eng_Latn): done",
        "Turkish (tur_Latn): counting the tokens of every text"]
    # One step alone has no rate yet: "estimating…", never a guess.
    alone = RunProgress(jobs=2, began=0.0)
    alone.step("eng_Latn", "train", 448, 3840, now=5.0)
    assert alone.document(names, now=9.0)["left"] is None
    assert alone.document(names, now=9.0)["lines"][0]["said"] == \
        "English (eng_Latn): training, 448 of 3,840 merges"


@pytest.mark.slow
def test_a_run_reports_progress_for_as_many_jobs_as_were_planned(tmp_path):
    """`planned_jobs` counts what the builders will report: if a builder reported under more
    labels (or fewer), the watch page's total would be wrong, and this fails."""
    from analyzer.runs import RunSettings, execute_run, resolve_settings
    from analyzer.serve.progress import planned_jobs
    from analyzer.store import open_db

    db = open_db(make_served_db(tmp_path, run=False))
    settings = RunSettings(sizes=[280, 300], parity=True, tokenizers=["cl100k_base"], jobs=1)
    planned = planned_jobs(resolve_settings(db, settings))
    labels: set[str] = set()
    execute_run(db, settings, report=lambda label, stage, done, total: labels.add(label))
    assert planned == len(labels) == 6  # shared, parity, 3 languages' own, cl100k_base


def test_the_home_page_says_its_question_and_offers_the_sample(app_client):
    from analyzer.serve.pages import QUESTION, SAMPLE_SIZES

    page = app_client.get("/").text
    assert page.index(QUESTION) < page.index("<h2>Corpora</h2>")  # what it answers, first
    sample = page_data_of(page)["sample"]
    assert sample["sizes"] == SAMPLE_SIZES and "cl100k_base" in sample["tokenizers"]
    assert "id='try-sample'" in page


def test_the_sample_is_stored_as_ingest_stores_it(app_client):
    from analyzer.corpus import SAMPLE_CORPUS, read_corpus

    first = app_client.post("/api/corpora/sample")
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["status"] == "created" and body["corpus"]["name"] == "harbour_town"
    assert body["corpus"]["source"] == "harbour_town"  # no folder of this server's
    assert len(body["corpus"]["languages"]) == len(read_corpus(SAMPLE_CORPUS).languages) == 12
    assert app_client.post("/api/corpora/sample").json()["status"] == "unchanged"
    started = app_client.post("/api/runs", json={"corpus": "harbour_town",
                                                  "tokenizers": ["cl100k_base"]})
    assert started.status_code == 202, started.text


def test_pieces_are_written_as_the_terminal_writes_a_token_s_bytes(app_client):
    from analyzer.bpe.readable import marked, readable
    from analyzer.external import resolve_tokenizer

    pieces = [piece for _, piece in resolve_tokenizer("cl100k_base").pieces(PARTIAL_TEXT)]
    body = app_client.post("/api/compare", json={"texts": {"hin_Deva": PARTIAL_TEXT},
                                                 "tokenizers": ["cl100k_base"],
                                                 "pieces": True}).json()
    shown = body["rows"][0]["pieces"]
    assert shown == [marked(piece) for piece in pieces]
    assert "‹e0 a4›" in "".join(shown) and "\\x" not in "".join(shown)
    # The marks are the terminal's (`readable`), whose quotes around whole characters the page
    # leaves out (it shows spaces itself).
    for piece, text in zip(pieces, shown, strict=True):
        assert re.findall("‹[^›]*›", text) == re.findall("‹[^›]*›", readable(piece))
    tokens = app_client.post("/api/tokenize", json={"text": PARTIAL_TEXT,
                                                    "tokenizer": "cl100k_base"}).json()
    assert tokens["pieces"] == shown


def test_a_size_that_is_no_number_is_refused_in_words(app_client):
    """The form sends `none` alone as no size; a client that sends it among sizes (or any
    other word) is told what a size is, never pydantic's "unable to parse string"."""
    for sizes in (["none", 512], ["abc"]):
        answer = app_client.post("/api/runs", json={"sizes": sizes})
        assert answer.status_code == 422, answer.text
        (said,) = [item["message"] for item in answer.json()["problems"] if item["field"] == "sizes"]
        assert said.startswith(f"sizes {sizes[0]}: a size is a whole number of tokens from 256")
        assert "to train nothing, give no size" in said and "Input should be" not in said
