"""Operating `analyzer serve` (issue 43): it starts from nothing (a missing database is made, and
the page says what to do first), answers the probes a load balancer asks, `/healthz` and
`/readyz`, without a token, logs each request, and takes its limits as options."""

from __future__ import annotations

import pytest

from helpers import Server, make_served_db

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

TOKEN = "a-token-of-sixteen-or-more"


@pytest.mark.slow
def test_serve_on_a_missing_database_makes_it_and_says_what_to_do_first(tmp_path):
    db = tmp_path / "new.db"
    server = Server(db)
    try:
        assert db.is_file()
        page = httpx.get(server.url + "/", timeout=60)
        assert page.status_code == 200
        assert "No corpus yet" in page.text and "analyzer ingest FOLDER" in page.text
        assert httpx.get(server.url + "/readyz", timeout=60).json()["status"] == "ready"
    finally:
        status, _, err = server.stop()
    assert f"A new, empty database: {db}" in err


def test_a_folder_that_does_not_exist_is_still_refused(tmp_path):
    from helpers import invoke

    result = invoke(tmp_path / "no" / "such.db", "serve", "--port", "0")
    assert result.exit_code == 1
    assert "no such folder for the database" in result.output
    assert not (tmp_path / "no").exists()


@pytest.mark.slow
def test_the_probes_answer_without_a_token_and_nothing_else_does(tmp_path):
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--token", TOKEN)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            ready = client.get("/readyz")
            assert ready.status_code == 200 and ready.json() == {"status": "ready",
                                                                  "database": db.name}
            assert client.get("/favicon.ico").status_code == 204  # asked for on the login page
            for method, path in (("GET", "/api/runs"), ("GET", "/api/queue"), ("POST", "/api/corpora"),
                                 ("GET", "/corpora/new"), ("GET", "/runs/new"), ("POST", "/api/runs")):
                assert client.request(method, path).status_code == 401, path
            assert client.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"}
                              ).status_code == 200
    finally:
        server.stop()


def test_readyz_says_why_a_database_is_not_ready(tmp_path):
    from fastapi.testclient import TestClient

    from analyzer.serve.app import create_app

    db = make_served_db(tmp_path, run=False)
    with TestClient(create_app(db), base_url="http://127.0.0.1") as client:
        assert client.get("/readyz").status_code == 200
        db.unlink()
        answer = client.get("/readyz")
        assert client.get("/healthz").status_code == 200  # the process still answers
    assert answer.status_code == 503 and answer.headers["retry-after"] == "10"
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert "was deleted while in use" in answer.json()["detail"]


@pytest.mark.slow
def test_each_request_is_a_json_line_in_the_log_and_carries_no_query(tmp_path):
    import json

    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--log-format", "json")
    try:
        assert httpx.get(server.url + "/api/corpora?secret=text", timeout=60).status_code == 200
        assert httpx.get(server.url + "/api/runs/99", timeout=60).status_code == 404
    finally:
        _, _, err = server.stop()
    lines = [json.loads(line) for line in err.splitlines()]  # every line JSON (issue 50)
    lines = [line for line in lines if "method" in line]  # the access log's
    assert [(line["method"], line["path"], line["status"]) for line in lines] == [
        ("GET", "/api/corpora", 200), ("GET", "/api/runs/99", 404)]
    assert all(line["bytes"] > 0 and line["ms"] >= 0 and line["time"].endswith("Z")
               and line["client"] == "127.0.0.1" for line in lines)
    assert "secret" not in err


@pytest.mark.slow
def test_the_text_log_is_the_default_and_none_turns_it_off(tmp_path):
    db = make_served_db(tmp_path, run=False)
    for args, expected in (((), True), (("--log-format", "none"), False)):
        server = Server(db, *args)
        try:
            httpx.get(server.url + "/healthz", timeout=60)
        finally:
            _, _, err = server.stop()
        assert ("127.0.0.1 GET /healthz 200 " in err) is expected


def test_the_command_line_names_every_log_format():
    from analyzer.cli.options import LogFormat
    from analyzer.serve.access_log import FORMATS

    assert tuple(f.value for f in LogFormat) == FORMATS


def test_readyz_says_a_database_that_can_no_longer_be_written_is_not_ready(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from analyzer.serve.app import create_app
    from analyzer.store import db as store_db

    db = make_served_db(tmp_path, run=False)
    with TestClient(create_app(db), base_url="http://127.0.0.1") as client:
        assert client.get("/readyz").status_code == 200
        # As root no permission bit refuses a write, so the reason is given as the store finds it.
        monkeypatch.setattr(store_db, "_why_read_only", lambda path: "no permission to write the file")
        answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["detail"] == f"{db.name} cannot be written now (no permission to write the file)"


def test_the_command_line_s_limits_are_the_service_s_defaults():
    import inspect

    from analyzer.cli.serve import serve
    from analyzer.serve import (
        DEFAULT_BODY_LIMIT,
        DEFAULT_CORPUS_LIMIT,
        DEFAULT_LOCK_WAIT,
        DEFAULT_MAX_QUEUE,
        DEFAULT_UPLOAD_SPACE,
        MIN_BODY_RATE,
        REQUEST_TIMEOUT,
    )

    options = {name: p.default.default for name, p in inspect.signature(serve).parameters.items()}
    assert (options["max_body"], options["max_queue"], options["max_corpus_bytes"],
            options["max_upload_space"], options["lock_wait"], options["request_timeout"],
            options["min_body_rate"]) == (
        DEFAULT_BODY_LIMIT, DEFAULT_MAX_QUEUE, DEFAULT_CORPUS_LIMIT, DEFAULT_UPLOAD_SPACE,
        DEFAULT_LOCK_WAIT, REQUEST_TIMEOUT, MIN_BODY_RATE)


def test_the_new_run_form_has_one_control_per_setting_with_its_default():
    """The form is made from the settings' definition: every field of the run request once,
    with its default, and nothing else."""
    import re

    from analyzer.serve.api import RunRequest
    from analyzer.serve.settings_form import settings_form
    from analyzer.settings import RunSettings

    form = settings_form(RunRequest, corpora=["tiny", "other"], corpus="other",
                         tokenizers={"cl100k_base": True, "gemma3": False})
    named = re.findall(r"data-setting='(\w+)'", form)
    assert sorted(named) == sorted(RunRequest.model_fields) and len(named) == len(set(named))
    defaults = RunSettings(sizes=[300])
    assert defaults.per_language and not defaults.parity
    assert re.search(r"id='setting-per_language'[^>]*checked", form)
    assert not re.search(r"id='setting-parity'[^>]*checked", form)
    assert re.search(r"<option selected>other</option>", form)
    assert re.search(r"value='gemma3' disabled> gemma3 \(not on this server\)", form)
    assert re.search(r"<input type='checkbox' value='bpe' checked>", form)
    assert f"placeholder='{defaults.min_pair_count}'" in form
    for name in RunRequest.model_fields:  # each with its description as help
        assert RunSettings.__pydantic_fields__[name].description.split("(")[0][:30].replace(
            "'", "&#x27;") in form, name
