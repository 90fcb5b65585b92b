"""The forms in the user's words (issue 52): the new-run form's labels are the settings' titles,
defined once in `RunSettings`; a run of production tokenizers alone is possible, as on the
command line; every refusal of a run's settings is answered at once, each at its setting; the
runs list names each run's tokenizers and corpus; the upload form lists each FLORES split
once; `analyzer serve` on a new database offers the page's upload as well as the command; the
playground starts with well-known tokenizers ticked."""

from __future__ import annotations

import dataclasses
import re
from html import escape

import pytest

from analyzer.settings import RunSettings, settings_errors
from helpers import Server, make_served_db, page_data_of

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")


def test_every_setting_has_a_title_of_its_own():
    fields = RunSettings.__pydantic_fields__  # type: ignore[attr-defined]
    titles = {name: fields[field.name].title for field in dataclasses.fields(RunSettings)
              for name in [field.name]}
    assert all(titles.values()), [name for name, title in titles.items() if not title]
    assert len(set(titles.values())) == len(titles)  # no two settings are called the same
    assert all(title != name for name, title in titles.items())  # words, not the code name


def test_the_run_form_labels_each_setting_by_its_title_and_keeps_its_id():
    from analyzer.serve.api import RunRequest
    from analyzer.serve.settings_form import settings_form

    form = settings_form(RunRequest, corpora=["tiny"], tokenizers={"cl100k_base": True,
                                                                    "llama3": False})
    for name, info in RunRequest.model_fields.items():
        assert (f"<label id='setting-{name}-label' for='setting-{name}'>{escape(info.title)}"
                "</label>") in form, name
        assert f"id='setting-{name}'" in form
        assert f"<code class='muted'>{name}</code>" in form  # the name the messages use
    # Production tokenizers: "all available", the catalog's, and a text entry for the others.
    group = re.search(r"<div id='setting-tokenizers'[^>]*>(.*?)</div>", form).group(1)
    boxes = re.findall(r"<input type='checkbox' value='([^']*)'", group)
    assert boxes == ["all-available", "cl100k_base", "llama3"]
    assert re.search(r"<textarea id='setting-tokenizers-more' data-adds='tokenizers'", form)
    assert "<label class='more' for='setting-tokenizers-more'>Other production tokenizers</label>" in form
    assert " required" not in form  # no setting is needed: sizes may be left empty


def test_sizes_may_be_left_out_as_on_the_command_line():
    from analyzer.cli.runs import RUN_OPTIONS, run_settings

    typed = {row.setting: None for row in RUN_OPTIONS}
    typed["tokenizers"] = ["cl100k_base"]
    assert run_settings(typed) == RunSettings(tokenizers=["cl100k_base"])
    assert RunSettings(tokenizers=["cl100k_base"]).sizes == []


def test_settings_errors_says_every_one():
    errors = [{"type": "greater_than_equal", "loc": ("body", "sizes", 0), "input": 100,
               "ctx": {"ge": 256}},
              {"type": "less_than", "loc": ("body", "holdout"), "input": 2, "ctx": {"lt": 1}}]
    said = settings_errors(errors, prefix=("body",))
    assert [(error.setting, str(error)) for error in said] == [
        ("sizes", "sizes 100: each must be from 256 to 16,777,216"),
        ("holdout", "holdout must be at least 0 and below 1, not 2")]


@pytest.fixture
def app_client(tmp_path):
    from fastapi.testclient import TestClient

    from analyzer.serve.app import create_app

    db = make_served_db(tmp_path, run=False)
    with TestClient(create_app(db), base_url="http://127.0.0.1") as client:
        yield client


def problems(response) -> list[tuple[str | None, str]]:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    found = [(item["field"], item["message"]) for item in body["problems"]]
    assert body["detail"] == found[0][1] and body.get("setting") == found[0][0]  # the first, as before
    return found


def test_the_api_answers_every_refusal_of_a_run_s_settings_at_once(app_client):
    # A bound of the definition (pydantic) and a check against the corpus (the server's).
    found = problems(app_client.post("/api/runs", json={"sizes": [100], "languages": ["xyz"]}))
    assert [field for field, _ in found] == ["sizes", "languages"]
    assert "256" in found[0][1] and "xyz" in found[1][1]
    # Several bounds, the service's own check of tokenizers, and the corpus's: every one.
    found = problems(app_client.post("/api/runs", json={
        "sizes": [300], "holdout": 2, "tokenizers": ["/etc/passwd"], "pivot": "zzz_Latn"}))
    assert [field for field, _ in found] == ["holdout", "tokenizers", "pivot"]
    assert "/etc/passwd" in found[1][1] and "zzz_Latn" in found[2][1]
    # The server's checks alone: each after the other, one setting refused set aside.
    found = problems(app_client.post("/api/runs", json={
        "sizes": [300], "languages": ["eng_Latn", "xyz"], "pivot": "zzz_Latn",
        "weights": {"fra_Latn": 2}}))
    assert [field for field, _ in found] == ["languages", "pivot", "weights"]
    assert "fra_Latn" in found[2][1]
    # Nothing to measure is one refusal, said once.
    assert [field for field, _ in problems(app_client.post("/api/runs", json={}))] == ["sizes"]
    # A refusal of no setting is listed too (field null).
    assert problems(app_client.post("/api/runs", json={"sizes": [300], "nope": 1}))[0][0] is None
    assert app_client.get("/api/runs").json() == [] and app_client.get("/api/queue").json() == []


def test_the_upload_form_lists_each_flores_split_once(app_client):
    from analyzer.corpus import DEFAULT_SPLIT, FLORES_SPLITS

    page = app_client.get("/corpora/new").text
    menu = re.search(r"<select id='upload-split' name='split'>(.*?)</select>", page).group(1)
    options = re.findall(r"<option(?: value='([^']*)')?[^>]*>([^<]*)</option>", menu)
    shown = [text for _, text in options]
    assert len(shown) == len(set(shown)) and set(shown) == set(FLORES_SPLITS)
    # The default is the first, sent empty: a corpus that is not FLORES is refused a split.
    assert options[0] == ("", DEFAULT_SPLIT)


def test_the_playground_ticks_well_known_tokenizers_and_calls_one_s_text_yours(app_client):
    from analyzer.external import catalog
    from analyzer.serve.pages import PLAYGROUND_TOKENIZERS

    page = app_client.get("/playground").text
    ticked = page_data_of(page)["ticked"]
    assert ticked == list(PLAYGROUND_TOKENIZERS) and set(ticked) <= set(catalog())
    assert "<span class='lang'>your text</span>" in page
    assert ">text</span>" not in page


@pytest.mark.slow
def test_the_runs_list_names_each_run_s_tokenizers_and_corpus(served, client):
    from analyzer.store import measured_names, open_db

    assert measured_names(open_db(served.db)) == {1: ["cl100k_base"]}
    page = client.get("/").text
    head = re.search(r"<table id='runs'><thead><tr>(.*?)</tr>", page).group(1)
    columns = re.findall(r"<th>([^<]*)</th>", head)
    row = re.search(r"<table id='runs'>.*?<tbody><tr>(.*?)</tr>", page).group(1)
    cells = dict(zip(columns, re.findall(r"<td[^>]*>(.*?)</td>", row), strict=False))
    assert cells["corpus"] == "tiny" and cells["tokenizers"] == "cl100k_base"
    assert cells["sizes"] == "280, 300"


@pytest.mark.slow
def test_serve_on_a_new_database_offers_the_page_s_upload_and_the_command(tmp_path):
    from analyzer.serve.workflow import NEW_CORPUS_PAGE

    db = tmp_path / "new.db"
    server = Server(db)
    try:
        assert httpx.get(server.url + NEW_CORPUS_PAGE, timeout=60).status_code == 200
    finally:
        _, _, stderr = server.stop()
    first = stderr.splitlines()[0]
    assert first.startswith(f"A new, empty database: {db}")
    assert NEW_CORPUS_PAGE in first and "uploads" in first
    assert f"analyzer ingest FOLDER --db {db}" in first
