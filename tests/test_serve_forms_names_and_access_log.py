"""The service's round-5 reliability cases (issue 50): forms cut short, corpus names that would
mean something else in a URL, the upload's `url` encoded, the access log that a request cannot
forge lines in, no server path in what clients see, the run form's fields refused at their
field, and the report page's ETag."""

from __future__ import annotations

import json

import pytest

from helpers import TINY, Server, dump, invoke, make_served_db, problem_of, serving, wait_for_progress

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

PAIRS = b"eng_Latn\tfra_Latn\nthe cat\tle chat\nthe dog\tle chien\n"
BOUNDARY = "b0undary"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    yield from serving(tmp_path_factory.mktemp("round5"), run=False)


def multipart(*parts: tuple[str, str | None, bytes], closed: bool = True) -> bytes:
    """A multipart/form-data body of (field, file name, content) parts, with its closing
    delimiter or (`closed=False`) without it."""
    body = b""
    for field, file_name, content in parts:
        disposition = f'form-data; name="{field}"' + (f'; filename="{file_name}"' if file_name else "")
        body += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + content + b"\r\n"
    return body + (f"--{BOUNDARY}--\r\n".encode() if closed else b"")


def post_form(client, body: bytes):
    return client.post("/api/corpora", content=body,
                       headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}"})


@pytest.mark.slow
def test_a_form_without_its_closing_boundary_is_refused_and_nothing_is_stored(served, client):
    """Item 9: the `name` part after the file, cut before the closing delimiter, was lost and
    the corpus stored under the file's name (201)."""
    before = dump(served.db)
    cut = post_form(client, multipart(("file", "cut.tsv", PAIRS), ("name", None, b"wanted"),
                                      closed=False))
    assert "ends before its closing boundary" in problem_of(cut, 400)
    assert dump(served.db) == before
    whole = post_form(client, multipart(("file", "cut.tsv", PAIRS), ("name", None, b"wanted")))
    assert whole.status_code == 201 and whole.json()["corpus"]["name"] == "wanted", whole.text


@pytest.mark.parametrize("parts, said", [
    ([("file", "pairs.tsv", PAIRS), ("name", None, b"one"), ("name", None, b"two")],
     "the form gives name more than once"),
    ([("file", "pairs.tsv", PAIRS), ("file", "other.tsv", PAIRS)], "the form gives file more than once"),
    ([("file", "caf\xe9.tsv", PAIRS)], "headers that are not UTF-8"),  # Latin-1's é
])
def test_a_form_that_would_be_misread_is_refused_and_nothing_is_stored(served, client, parts, said):
    """Hostile pass on item 9: a field given twice kept its last value without a word, and a
    file name that is not UTF-8 was read as Latin-1 (another name)."""
    before = dump(served.db)
    body = multipart(*[(field, None, content) for field, _, content in parts])
    for field, file_name, _ in parts:  # file names as raw bytes, as a client may send them
        if file_name is not None:
            body = body.replace(f'name="{field}"\r\n'.encode(),
                                f'name="{field}"; filename="'.encode()
                                + file_name.encode("latin-1") + b'"\r\n', 1)
    assert said in problem_of(post_form(client, body), 400)
    assert dump(served.db) == before


@pytest.mark.slow
@pytest.mark.parametrize("name", ["..", ".", "a/b", "a?b#c", "a\\b", "100%"])
def test_names_that_mean_something_else_in_a_url_are_refused_by_upload_and_ingest(
        served, client, tmp_path, name):
    """Item 9: one rule for corpus names, whoever gives them; nothing stored."""
    before = dump(served.db)
    detail = problem_of(client.post("/api/corpora", files={"file": ("pairs.tsv", PAIRS)},
                                    data={"name": name}), 422)
    assert f"corpus name {name!r}" in detail and "choose another with name" in detail, detail
    assert dump(served.db) == before
    db = tmp_path / "cli.db"
    corpus = tmp_path / "pairs.tsv"
    corpus.write_bytes(PAIRS)
    result = invoke(db, "ingest", corpus, "--name", name)
    assert result.exit_code not in (0, 70), result.output
    assert f"corpus name {name!r}" in result.output and "--name" in result.output, result.output


def test_the_url_of_an_uploaded_corpus_is_encoded_and_leads_to_it(client):
    answer = client.post("/api/corpora", files={"file": ("pairs.tsv", PAIRS)},
                         data={"name": "my pairs é+1"})
    assert answer.status_code == 201, answer.text
    url = answer.json()["url"]
    assert url == "/api/corpora/my%20pairs%20%C3%A9%2B1"
    assert client.get(url).json()["name"] == "my pairs é+1"


def test_a_name_that_is_only_dots_in_a_folder_still_ingests_under_its_own(tmp_path):
    """The default name of a folder is its own; a name with dots inside is fine."""
    folder = tmp_path / "v1.2"
    folder.mkdir()
    for lang, lines in TINY.items():
        (folder / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke(tmp_path / "x.db", "ingest", folder)
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_no_answer_names_where_the_server_keeps_its_database(tmp_path):
    """Item 10: /readyz (no token needed), and the 503s of a database busy or gone, named the
    database by its absolute path; they say its file name only."""
    import os
    import sqlite3

    db = make_served_db(tmp_path, run=False)
    server = Server(db, env={"ANALYZER_BUSY_TIMEOUT": "0.2"})
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            ready = client.get("/readyz")
            assert ready.json() == {"status": "ready", "database": "served.db"}, ready.text

            holder = sqlite3.connect(db)  # another process's write lock, held
            holder.execute("BEGIN IMMEDIATE")
            try:
                busy = client.post("/api/corpora", files={"file": ("pairs.tsv", PAIRS)})
            finally:
                holder.rollback()
                holder.close()
            assert busy.status_code == 503 and "served.db is locked" in busy.text, busy.text
            assert str(tmp_path) not in busy.text

            os.replace(db, tmp_path / "moved.db")  # the database gone while served
            answers = [client.get("/readyz"), client.get("/api/corpora"),
                       client.post("/api/runs", json={"sizes": [300]}),
                       client.post("/api/corpora", files={"file": ("pairs.tsv", PAIRS)})]
            for answer in answers:
                assert answer.status_code == 503, answer.text
                assert "the database served.db was" in answer.text, answer.text
                assert str(tmp_path) not in answer.text, answer.text
    finally:
        server.stop()


@pytest.mark.slow
def test_a_request_cannot_forge_a_line_of_the_text_access_log(tmp_path):
    """Item 8: the decoded path was written raw, so `%0a` in a URL began a line of its own."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db)  # the text log is the default
    try:
        for target in ("/x%0a127.0.0.1%20GET%20/FORGED%20200", "/x%0d%0aFORGED", "/x%7f%c2%85%e2%80%a8FORGED",
                       "/x%5cx0aFORGED"):
            assert httpx.get(server.url + target, timeout=60).status_code == 404
    finally:
        _, _, err = server.stop()
    lines = [line for line in err.splitlines() if "FORGED" in line]
    assert len(lines) == 4, err
    assert all(line.startswith("127.0.0.1 GET /x") and line.endswith(" B") for line in lines), lines
    assert "/x\\n127.0.0.1\\x20GET\\x20/FORGED\\x20200 404 " in lines[0], lines[0]
    assert "/x\\\\x0aFORGED 404 " in lines[3], lines[3]  # a backslash sent is not an escape


@pytest.mark.parametrize(("field", "value", "said"), [
    ("holdout", "Infinity", "finite"), ("target", "Infinity", "finite"), ("jobs", "abc", "integer"),
    ("min_pair_count", "1e999", "integer"), ("target", "abc", "number")])
def test_a_run_request_refuses_a_number_that_is_not_one_at_its_field(client, field, value, said):
    """Item 12 (the API the run form sends to): a non-number is refused, naming its field."""
    answer = client.post("/api/runs", json={"sizes": [300], "corpus": "tiny", field: value})
    detail = problem_of(answer, 422)
    assert answer.json()["setting"] == field and said in detail, answer.text
    assert client.get("/api/runs").json() == [] and client.get("/api/queue").json() == []


def test_an_unknown_training_source_is_said_of_train_on(client):
    """Item 12: the refusal names its setting, so the run form shows it at that field."""
    answer = client.post("/api/runs", json={"sizes": [300], "corpus": "tiny", "train_on": "nope"})
    assert "no training source named 'nope'" in problem_of(answer, 404)
    assert answer.json()["setting"] == "train_on", answer.text


@pytest.mark.parametrize(("field", "value", "status"), [
    ("corpus", "x\ud800", 404), ("train_on", "x\ud800", 404), ("languages", ["x\ud800"], 422),
    ("pivot", "x\ud800", 422), ("tokenizers", ["x\ud800"], 404), ("mix", "x\ud800", 422)])
def test_a_lone_surrogate_in_a_run_request_is_refused_not_a_500(client, field, value, status):
    """A lone surrogate (JSON's "\\ud800") in any field of the run form: the lookup of a name
    that holds one, and any answer that quotes one, was a 500 (UTF-8 cannot carry it)."""
    body = json.dumps({"sizes": [300], "corpus": "tiny", field: value})  # "\\ud800" escaped
    answer = client.post("/api/runs", content=body, headers={"content-type": "application/json"})
    assert "\\ud800" in problem_of(answer, status) or field in answer.json()["setting"], answer.text
    assert client.get("/api/runs").json() == [] and client.get("/api/queue").json() == []


@pytest.mark.slow
def test_the_report_page_has_an_etag_and_answers_304_to_it(tmp_path):
    """Item 12: GET /runs/ID (a complete run's report) sends an ETag, as the docs say."""
    db = make_served_db(tmp_path, run=True)
    server = Server(db)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            first = client.get("/runs/1")
            assert first.status_code == 200 and "ETag" in first.headers, first.headers
            tag = first.headers["ETag"]
            again = client.get("/runs/1", headers={"If-None-Match": tag})
            assert again.status_code == 304 and again.content == b"" and again.headers["ETag"] == tag
            assert client.get("/runs/1", headers={"If-None-Match": '"other"'}).status_code == 200
            assert client.get("/api/runs/1", headers={"If-None-Match": tag}).status_code == 200
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("when", ["starting", "running"])
def test_ctrl_c_during_a_run_leaves_no_traceback_and_a_json_log_is_json_throughout(tmp_path, when):
    """Item 11: Ctrl-C at the server's terminal (SIGINT to every process of its group) while a
    run's process started printed a KeyboardInterrupt traceback from the middle of its imports;
    and with --log-format json, the server's own lines (its address, "Interrupted") were text.
    `starting`: the signal lands while the run's process is still starting up (held there by
    the test hook until the signal has been sent); `running`: once the run reports progress."""
    import json
    import os
    import signal
    import threading

    go = tmp_path / "go"
    os.mkfifo(go)
    db = make_served_db(tmp_path, run=False)
    env = {"ANALYZER_TEST_STALL": "1"}
    if when == "starting":
        env["ANALYZER_TEST_PAUSE_AT"] = f"multiprocessing.spawn.prepare:{go}"
    server = Server(db, "--log-format", "json", env=env)
    answers: list = []
    asked = threading.Thread(target=lambda: answers.append(httpx.post(
        server.url + "/api/runs", json={"sizes": [60000], "jobs": 2}, timeout=120)))
    try:
        asked.start()
        if when == "starting":
            server.run.wait_for("paused before prepare")  # the run's process is starting
            os.killpg(server.run.pid, signal.SIGINT)
            threading.Thread(target=lambda: go.write_text("go\n"), daemon=True).start()
            asked.join(120)
        else:
            asked.join(120)
            with httpx.Client(base_url=server.url, timeout=60) as client:
                wait_for_progress(client, answers[0].json()["run"])
            import socket  # a request uvicorn cannot parse: uvicorn logs a warning

            host, port = server.url.split("//")[1].split(":")
            with socket.create_connection((host, int(port))) as raw:
                raw.sendall(b"NOT HTTP\x00\r\n\r\n")
                assert raw.recv(100).startswith(b"HTTP/1.1 400")
            os.killpg(server.run.pid, signal.SIGINT)
        code, _, stderr = server.run.finish()
    finally:
        os.close(os.open(go, os.O_RDONLY | os.O_NONBLOCK))  # a writer still waiting goes on
        server.run.kill()
    assert answers and answers[0].status_code == 202, answers and answers[0].text
    assert code == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "leaked" not in stderr, stderr
    lines = [json.loads(line) for line in stderr.splitlines()  # every one JSON (but the hook's)
             if not line.startswith("analyzer-test:")]
    assert all(isinstance(line, dict) and "time" in line for line in lines), lines
    messages = [line.get("message", "") for line in lines]
    assert any(message.startswith("Serving ") for message in messages), messages
    assert any(message.startswith("Stopped") for message in messages), messages
    if when == "running":
        assert any(line.get("logger") == "uvicorn.error" for line in lines), lines
    again = Server(db)  # the run was marked interrupted, as by a stop
    try:
        run = httpx.get(f"{again.url}/api/runs/{answers[0].json()['run']}", timeout=60).json()
        assert run["status"] == "interrupted", run
    finally:
        again.stop()


def test_only_the_whole_database_folder_is_hidden_not_a_name_it_begins(tmp_path):
    """Item 10's kind: a path in a message was hidden by a plain text replacement, so a file in
    a folder whose name only begins with the database folder's (`/srv/a` and `/srv/a2/...`) was
    shown as "the database's folder2/...": a wrong path, still half there."""
    from pathlib import Path

    from analyzer.errors import Invalid
    from analyzer.serve.state import without_paths

    db = Path("/srv/a/x.db")
    for message in ("/srv/a2/src/eng.txt changed", "/srv/a-old/eng.txt changed",
                    "/backup/srv/a/eng.txt changed"):
        error = without_paths(Invalid(message, file=message.split()[0]), db)
        assert str(error) == message and error.file == message.split()[0]
    error = without_paths(Invalid("/srv/a/src/eng.txt changed in /srv/a.", file="/srv/a/src"), db)
    assert str(error) == "the database's folder/src/eng.txt changed in the database's folder."
    assert error.file == "the database's folder/src"
