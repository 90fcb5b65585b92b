"""`analyzer serve` through a real uvicorn on a loopback port, driven by httpx: the API's
documents equal the CLI's, errors are problem details, runs start, stop and fail in their own
process, and the guards (token, body limit, CSP, names never paths) hold."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli import app
from helpers import (
    TINY,
    WAIT,
    Server,
    cli_output,
    make_served_db,
    problem_of,
    processes_in_session,
    wait_for_progress,
    wait_for_status,
)

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

runner = CliRunner()
TOKEN = "a-token-of-sixteen-or-more"


@pytest.mark.slow
def test_the_api_returns_the_cli_documents(served, client):
    # The same documents, but where a corpus was ingested from: its folder's name only (the
    # command line's user is on this machine; a client is not: issue 68, item 8).
    listed = json.loads(cli_output(served.db, "corpora", "--json"))
    assert listed[0]["source"] == str(served.db.parent / "tiny")
    assert client.get("/api/corpora").json() == [{**listed[0], "source": "tiny"}]
    detail = json.loads(cli_output(served.db, "corpus", "tiny", "--json"))
    assert client.get("/api/corpora/tiny").json() == {**detail, "source": "tiny"}
    assert client.get("/api/runs").json() == json.loads(cli_output(served.db, "runs", "--json"))
    assert client.get("/api/runs/1").json() == json.loads(cli_output(served.db, "show", "1", "--json"))
    assert client.get("/api/runs/1/export").json() == json.loads(cli_output(served.db, "export", "1"))
    csv = client.get("/api/runs/1/export", params={"format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.strip() == cli_output(served.db, "export", "1", "--format", "csv").strip()
    for form in ("json", "csv"):  # each unit's counts, streamed as the command line writes them
        streamed = client.get("/api/runs/1/export", params={"format": form, "units": "true"})
        assert streamed.text == cli_output(served.db, "export", "1", "--format", form, "--units")
    merges = client.get("/api/runs/1/merges", params={"vocab": "parity", "top": 5}).json()
    exported = json.loads(cli_output(served.db, "export", "1"))
    parity = next(v for v in exported["vocabularies"] if v["scope"] == "parity")
    assert merges["merges"] == parity["merges"][:5] and merges["merges_learned"] == 44
    unit = client.get("/api/corpora/tiny/units/1").json()
    assert unit == {lang: TINY[lang][1] for lang in unit} and len(unit) == 3
    schema = client.get("/openapi.json").json()
    assert {"/api/runs", "/api/tokenize", "/api/compare", "/api/runs/{run_id}/export"} <= set(schema["paths"])


def test_tokenize_and_compare_count_as_the_library_does(client):
    from analyzer import bpe
    from analyzer.external import resolve_tokenizer

    text = "the cat sat on the mat, кот сидел"
    body = client.post("/api/tokenize", json={"text": text, "run": 1, "size": 290}).json()
    assert body["count"] == len(body["ids"]) == len(body["pieces"])
    assert bytes.fromhex("".join(body["bytes"])).decode("utf-8") == text
    merges = [((m["left"], m["right"]), m["id"]) for m in
              client.get("/api/runs/1/merges", params={"top": 34}).json()["merges"]]
    assert body["ids"] == bpe.encode(text, merges)
    cl100k = client.post("/api/tokenize", json={"text": text, "tokenizer": "cl100k_base"}).json()
    expected = resolve_tokenizer("cl100k_base").pieces(text)
    assert cl100k["ids"] == [token for token, _ in expected]
    assert cl100k["count"] == resolve_tokenizer("cl100k_base").count([text])[0]
    texts = {lang: lines[0] for lang, lines in TINY.items()}
    result = client.post("/api/compare", json={"texts": texts, "run": 1,
                                              "tokenizers": ["cl100k_base"], "pieces": True}).json()
    assert result["pivot"] == "eng_Latn"
    rows = {(row["vocab"], row["lang"]): row for row in result["rows"]}
    assert {vocab for vocab, _ in rows} == {"shared", "parity", "eng_Latn", "kor_Hang", "rus_Cyrl",
                                            "cl100k_base"}
    for (vocab, _), row in rows.items():
        assert row["premium"] == pytest.approx(row["tokens"] / rows[vocab, "eng_Latn"]["tokens"])
        assert len(row["pieces"]) == row["tokens"]


@pytest.mark.slow
def test_errors_are_problem_details_with_the_cli_messages(client):
    assert "no run 99; runs here: 1" in problem_of(client.get("/api/runs/99"), 404)
    assert "no corpus named 'nope'" in problem_of(client.get("/api/corpora/nope"), 404)
    assert "units 0 to 5" in problem_of(client.get("/api/corpora/tiny/units/6"), 404)
    problem_of(client.get("/api/runs/1/merges", params={"vocab": "fra_Latn"}), 404)
    problem_of(client.post("/api/tokenize", json={"run": 1}), 422)  # no text
    assert "lone surrogate" in problem_of(
        client.post("/api/tokenize", content=b'{"text": "a\\ud800b", "run": 1}',
                    headers={"content-type": "application/json"}), 422)
    assert "outside 256..300" in problem_of(
        client.post("/api/tokenize", json={"text": "x", "run": 1, "size": 5000}), 404)
    assert "unknown tokenizer" in problem_of(
        client.post("/api/tokenize", json={"text": "x", "tokenizer": "/etc/passwd"}), 404)
    assert "100" in problem_of(client.post("/api/runs", json={"sizes": [100]}), 422)
    problem_of(client.post("/api/runs", json={"sizes": [300], "unknown": 1}), 422)
    # imported counts are files on the server: a client never names one
    problem_of(client.post("/api/runs", json={"counts": ["m=/etc/passwd"]}), 422)
    superbpe = client.post("/api/runs", json={"sizes": [300], "superbpe": [300], "jobs": 1})
    assert "superbpe 300: the transition" in problem_of(superbpe, 422)  # the JSON field's name
    assert superbpe.json()["setting"] == "superbpe"
    problem_of(client.delete("/api/runs/1"), 409)  # complete: nothing to interrupt
    runs_before = client.get("/api/runs").json()
    # Refused by the run's own process, before it records anything (a pattern that loses text):
    assert "re:a" in problem_of(client.post("/api/runs", json={
        "sizes": [300], "pretokenizers": ["re:a"], "jobs": 1}), 422)
    assert client.get("/api/runs").json() == runs_before
    problem_of(client.get("/api/runs/1/export", params={"format": "xml"}), 422)


def test_pages_send_a_policy_and_static_files_are_a_fixed_set(client):
    for path in ("/", "/runs/1", "/playground", "/corpora/new", "/runs/new"):
        response = client.get(path)
        assert response.status_code == 200, path
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "object-src 'none'" in csp
    assert "'sha256-" in client.get("/runs/1").headers["content-security-policy"]
    plotly = client.get("/runs/" + client.get("/runs/1").text.split("src='")[1].split("'")[0])
    assert plotly.status_code == 200 and len(plotly.content) > 1_000_000
    for path in ("/static/playground.js", "/static/playground.css", "/static/common.js",
                 "/static/workflow.js", "/static/signin.css",
                 "/static/report.css", "/static/page-data.js"):  # the reports' folder too
        assert client.get(path).status_code == 200
    for path in ("/static/..%2Fapp.py", "/static/app.py", "/static/%2e%2e/pages.py", "/runs/x.min.js"):
        assert client.get(path).status_code == 404, path
    problem_of(client.get("/runs/99"), 404)


def test_a_page_s_data_is_never_hashed_as_a_script_it_may_run():
    """A served report's policy allows its inline scripts by hash: its data block is not one,
    and text in the data (a language's name) cannot make one the policy would allow."""
    import base64
    import hashlib

    from analyzer.report.files import page_data
    from analyzer.serve.pages import inline_script_hashes

    html = page_data({"names": {"x": "</script><script>alert(1)</script>"}}) + "<script>run()</script>"
    assert inline_script_hashes(html) == [base64.b64encode(hashlib.sha256(b"run()").digest()).decode()]


@pytest.mark.slow
def test_a_body_over_the_limit_gets_413(tmp_path):
    db = make_served_db(tmp_path)
    server = Server(db, "--max-body", "2000")
    try:
        with httpx.Client(base_url=server.url) as client:
            small = client.post("/api/tokenize", json={"text": "x" * 1000, "run": 1})
            assert small.status_code == 200
            assert "over the limit of 2,000 bytes" in problem_of(
                client.post("/api/tokenize", json={"text": "x" * 5000, "run": 1}), 413)

            def chunks():  # no Content-Length: the body is counted as it streams
                for _ in range(10):
                    yield b"x" * 1000

            streamed = client.post("/api/compare", content=chunks(),
                                   headers={"content-type": "application/json"})
            problem_of(streamed, 413)
    finally:
        server.stop()


@pytest.mark.slow
def test_a_token_guards_every_request_and_other_addresses_need_one(tmp_path):
    db = make_served_db(tmp_path)
    server = Server(db, "--token", TOKEN)
    try:
        with httpx.Client(base_url=server.url) as client:
            for path in ("/api/runs", "/", "/openapi.json"):
                response = client.get(path)
                assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
            assert client.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
            assert client.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    finally:
        server.stop()
    refused = runner.invoke(app, ["serve", "--host", "0.0.0.0", "--db", str(db)],
                            env={"ANALYZER_TOKEN": ""})
    assert refused.exit_code == 1 and "needs a token" in refused.output
    short = runner.invoke(app, ["serve", "--token", "short", "--db", str(db)])
    assert short.exit_code == 1 and "at least 16 characters" in short.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = runner.invoke(app, ["serve", "--port", str(taken.getsockname()[1]), "--db", str(db)])
    assert busy.exit_code == 1 and "cannot listen on 127.0.0.1:" in busy.output


@pytest.mark.slow
def test_a_run_started_through_the_api_completes_like_the_cli(tmp_path):
    db = make_served_db(tmp_path)
    server = Server(db)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            started = client.post("/api/runs", json={"sizes": [280, 300], "parity": True,
                                                     "jobs": 1, "tokenizers": ["cl100k_base"]})
            assert started.status_code == 202, started.text
            run_id = started.json()["run"]
            done = wait_for_status(client, run_id, {"complete", "failed"})
            assert done["status"] == "complete"
            ours = client.get(f"/api/runs/{run_id}/export").json()
            theirs = client.get("/api/runs/1/export").json()
            assert [v["merges"] for v in ours["vocabularies"]] == [v["merges"] for v in theirs["vocabularies"]]
            assert ours["records"] == theirs["records"]
    finally:
        server.stop()


@pytest.mark.slow
def test_an_extension_started_through_the_api_is_among_the_playground_s_choices(tmp_path):
    db = make_served_db(tmp_path)
    server = Server(db)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            refused = client.post("/api/runs", json={"sizes": [], "extend": ["mistral-v3"],
                                                     "added": [10], "jobs": 1})
            assert "extend cannot extend mistral-v3" in problem_of(refused, 422)
            assert refused.json()["setting"] == "extend"
            started = client.post("/api/runs", json={"sizes": [], "extend": ["o200k_base"],
                                                     "added": [10, 30], "min_pair_count": 1,
                                                     "jobs": 1})
            assert started.status_code == 202, started.text
            run_id = started.json()["run"]
            assert wait_for_status(client, run_id, {"complete", "failed"})["status"] == "complete"
            document = client.get(f"/api/runs/{run_id}/export").json()
            assert document["extend"] == ["o200k_base"] and document["added"] == [10, 30]
            assert {row["lang"] for row in document["extension_reach"]} == set(TINY)
            scopes = [v["scope"] for v in client.get(f"/api/runs/{run_id}/vocabularies").json()]
            assert scopes == ["extend:o200k_base"]
            text = TINY["kor_Hang"][0]
            tokens = client.post("/api/tokenize", json={"text": text, "run": run_id,
                                                        "vocab": "extend:o200k_base"}).json()
            compared = client.post("/api/compare", json={"texts": {"kor_Hang": text},
                                                         "run": run_id}).json()
            assert compared["rows"][0]["vocab"] == "extend:o200k_base"
            assert compared["rows"][0]["tokens"] == tokens["count"]
            assert "".join(tokens["pieces"]) == text
    finally:
        server.stop()


@pytest.mark.slow
def test_one_run_at_a_time_delete_interrupts_and_a_crash_is_marked_failed(tmp_path):
    db = make_served_db(tmp_path)
    server = Server(db, env={"ANALYZER_TEST_STALL": "1"})  # trainings wait once they report
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            run_id = client.post("/api/runs", json={"sizes": [60000], "jobs": 1}).json()["run"]
            body = wait_for_progress(client, run_id)
            assert body["status"] == "running" and body["records"] == []
            queued = client.post("/api/runs", json={"sizes": [300]})  # waits its turn
            assert queued.status_code == 202 and queued.json()["position"] == 1, queued.text
            assert client.delete(queued.json()["url"]).json()["status"] == "cancelled"
            stopped = client.delete(f"/api/runs/{run_id}")
            assert stopped.status_code == 200 and stopped.json()["status"] == "interrupted"
            assert stopped.json()["error"] == "stopped by SIGTERM"
            assert query(db, "SELECT count(*) FROM vocabularies WHERE run_id = ?", run_id) == [(0,)]

            crashed = client.post("/api/runs", json={"sizes": [60000], "jobs": 1}).json()["run"]
            wait_for_progress(client, crashed)
            [(pid,)] = query(db, "SELECT pid FROM runs WHERE id = ?", crashed)
            os.kill(pid, signal.SIGKILL)
            failed = wait_for_status(client, crashed, {"failed"})
            assert "ended unexpectedly" in failed["error"]
            assert client.get("/api/runs").status_code == 200  # the server serves on
            assert client.post("/api/runs", json={"sizes": [300], "jobs": 1}).status_code == 202
    finally:
        code, _, stderr = server.stop()
    assert "Traceback" not in stderr


def query(db, sql, *args):
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql, args).fetchall()


# Round 3: the service runs runs by default, refuses runaway patterns fast, agrees with itself,
# lets a browser in behind a token, works offline, and holds no connection for nothing.

@pytest.mark.slow
def test_a_default_run_completes_and_the_next_may_start_at_once(tmp_path):
    """The defaults (a vocabulary per language, a pool of workers) in the service's run
    process; and a POST right after GET shows a run complete is never told it is running."""
    db = make_served_db(tmp_path)
    server = Server(db)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for _ in range(3):
                started = client.post("/api/runs", json={"sizes": [300], "corpus": "tiny"})
                assert started.status_code == 202, started.text
                done = wait_for_status(client, started.json()["run"], {"complete", "failed"})
                assert done["status"] == "complete", done
                assert {r["vocab"] for r in done["records"]} >= {"shared", "eng_Latn", "kor_Hang"}
    finally:
        code, _, stderr = server.stop()
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_a_runaway_pattern_is_refused_and_a_starting_run_blocks_nobody(tmp_path):
    from helpers import cli_output

    corpus = tmp_path / "c.tsv"
    corpus.write_text("eng_Latn\trus_Cyrl\nthe cat\tкот\n" + "a" * 40 + "!\tкот!\n", encoding="utf-8")
    db = tmp_path / "a.db"
    cli_output(db, "ingest", corpus)
    server = Server(db)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            detail = problem_of(client.post("/api/runs", json={
                "sizes": [300], "pretokenizers": ["re:(?:a|a)*$|[\\s\\S]"]}), 422)
            assert "runs away: eng_Latn unit 2 of corpus 'c'" in detail, detail
            assert client.get("/api/runs").json() == []
            assert client.post("/api/runs", json={"sizes": [300], "jobs": 1}).status_code == 202
    finally:
        server.stop()


@pytest.mark.slow
def test_a_post_while_another_run_is_starting_is_answered_at_once(tmp_path):
    db = make_served_db(tmp_path)
    server = Server(db, env={"ANALYZER_TEST_STALL_AT": "check_lossless"})
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client, \
                httpx.Client(base_url=server.url, timeout=120) as other:
            first: list = []
            poster = threading.Thread(target=lambda: first.append(
                other.post("/api/runs", json={"sizes": [300], "jobs": 1})), daemon=True)
            poster.start()
            server.run.wait_for("analyzer-test: stalled before check_lossless")  # the child's line
            queued = client.post("/api/runs", json={"sizes": [300]})  # queued, answered at once
            assert queued.status_code == 202 and queued.json()["status"] == "waiting", queued.text
            # The starting run's process (multiprocessing's spawn_main; not its resource tracker)
            # dies before recording its run.
            [child] = [pid for pid in processes_in_session(server.run.pid)
                       if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
            os.kill(child, signal.SIGKILL)
            poster.join(timeout=60)
            assert "ended before recording the run" in problem_of(first[0], 422)
            assert [r["id"] for r in client.get("/api/runs").json()] == [1]  # nothing recorded
    finally:
        server.stop()


@pytest.mark.slow
def test_a_browser_signs_in_behind_a_token_and_the_api_keeps_its_bearer_check(tmp_path):
    db = make_served_db(tmp_path)
    server = Server(db, "--token", TOKEN)
    page = {"Accept": "text/html,application/xhtml+xml"}
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            sent = client.get("/playground", headers=page)
            assert sent.status_code == 303 and sent.headers["location"] == "/login?next=%2Fplayground"
            form = client.get("/login", params={"next": "/playground"})
            assert form.status_code == 200 and "name='token'" in form.text
            assert "content-security-policy" in form.headers
            wrong = client.post("/login", data={"token": "not-the-token-at-all", "next": "/playground"})
            assert wrong.status_code == 401 and "not the token of this server" in wrong.text
            assert "set-cookie" not in wrong.headers
            signed = client.post("/login", data={"token": TOKEN, "next": "https://evil.example/"})
            assert signed.status_code == 303 and signed.headers["location"] == "/"  # never away
            cookie = signed.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
            assert TOKEN not in cookie
            assert client.get("/playground", headers=page).status_code == 200  # the cookie
            assert client.get("/api/runs").status_code == 200
            text = {"text": "the cat", "tokenizer": "cl100k_base"}
            origin = server.url  # the cookie alone reads only (test_serve_sessions.py)
            assert problem_of(client.post("/api/tokenize", json=text, headers={"Origin": origin}), 403)
            assert problem_of(client.post("/api/tokenize", json=text,
                                          headers={"Origin": "https://evil.example"}), 403)
        with httpx.Client(base_url=server.url, timeout=60) as stranger:
            assert stranger.get("/api/runs").status_code == 401
        port = server.url.rsplit(":", 1)[1]
        with httpx.Client(base_url=server.url, timeout=60,
                          cookies={f"analyzer_session_{port}": "0" * 64}) as forger:
            assert forger.get("/api/runs").status_code == 401
        with httpx.Client(base_url=server.url, timeout=60) as stranger:
            bearer = stranger.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
            assert bearer.status_code == 200
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("token, said", [(" " * 16, "this one is blank"), ("   short token  ", "11 once stripped")])
def test_a_blank_or_short_token_is_refused(tmp_path, token, said):
    db = make_served_db(tmp_path)
    refused = runner.invoke(app, ["serve", "--host", "0.0.0.0", "--token", token, "--db", str(db)])
    assert refused.exit_code == 1 and said in " ".join(refused.output.split())


def test_no_page_loads_from_the_network_and_every_answer_says_nosniff(served, client):
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").status_code == 200
    plotly = client.get("/runs/1").text.split("src='")[1].split("'")[0]
    for path in ("/api/runs", "/api/runs/1/export?format=csv", "/static/playground.js",
                 f"/runs/{plotly}", "/api/runs/99", "/", "/nothing-here"):
        assert client.get(path).headers.get("x-content-type-options") == "nosniff", path
    index = client.get("/").text
    assert "/docs" not in index and "https://" not in index


def test_a_page_for_an_id_beyond_any_integer_is_a_problem_not_a_crash(served, client):
    for path in ("/runs/100000000000000000000", "/runs/0"):
        response = client.get(path)
        assert 400 <= response.status_code < 500, path
        assert response.headers["content-type"].startswith("application/problem+json")


@pytest.mark.slow
def test_connections_that_send_nothing_or_half_a_request_are_closed(served, client):
    host, port = served.url.split("//")[1].split(":")
    held = [socket.create_connection((host, int(port)), timeout=WAIT) for _ in range(20)]
    held[0].sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers never finished
    try:
        for connection in held:
            assert connection.recv(1024) == b""  # closed by the server (the bound: a hang)
    finally:
        for connection in held:
            connection.close()
    assert client.get("/api/runs").status_code == 200


@pytest.mark.slow
def test_the_server_closes_every_connection_it_opens(served, client):
    """A few thousand requests of every kind that reads the database, and the server holds as
    many files open after as before (each request's SQLite connection is closed with it)."""
    def open_files() -> int:
        return len(os.listdir(f"/proc/{served.run.pid}/fd"))

    for _ in range(20):  # warm: caches filled, the thread pool at its size
        client.get("/api/runs/1")
    before = open_files()
    paths = ["/api/runs", "/api/runs/1", "/api/corpora", "/api/corpora/tiny", "/", "/runs/1",
             "/api/runs/1/vocabularies", "/api/runs/1/merges", "/api/corpora/tiny/units/0"]
    for i in range(2000):
        assert client.get(paths[i % len(paths)]).status_code == 200
        if i % 10 == 0:
            assert client.post("/api/tokenize", json={"text": f"the cat {i}", "run": 1}).status_code == 200
    assert open_files() <= before + 4, (before, open_files())


@pytest.mark.slow
def test_a_unigram_vocabulary_is_served_from_its_stored_model(tmp_path):
    pytest.importorskip("tokenizers")
    from analyzer.queries import trained_vocabulary
    from analyzer.store import open_db

    db = make_served_db(tmp_path)
    cli_output(db, "run", "--vocab", "300,340", "--algorithm", "unigram", "--pretokenize", "words",
               "--no-per-language", "--jobs", "1", "--no-report")
    server = Server(db)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            text = TINY["kor_Hang"][0]
            body = client.post("/api/tokenize", json={"text": text, "run": 2, "vocab": "unigram",
                                                      "size": 300}).json()
            assert bytes.fromhex("".join(body["bytes"])).decode("utf-8") == text
            expected = trained_vocabulary(open_db(db), 2, "unigram", 300).pieces(text)
            assert body["ids"] == [token for token, _ in expected]
            texts = {lang: lines[0] for lang, lines in TINY.items()}
            trained = client.post("/api/compare", json={"texts": texts, "run": 2, "size": 340}).json()
            assert {row["vocab"] for row in trained["rows"]} == {"shared", "unigram"}
            # A size the run did not train: BPE has it (a prefix), Unigram does not.
            between = client.post("/api/compare", json={"texts": texts, "run": 2, "size": 320}).json()
            assert {row["vocab"] for row in between["rows"]} == {"shared"}
            asked = client.post("/api/compare", json={"texts": texts, "run": 2, "size": 320,
                                                      "vocabs": ["unigram"]})
            assert "was trained at sizes 300, 340, not 320" in problem_of(asked, 404)
            merges = client.get("/api/runs/2/merges", params={"vocab": "unigram"})
            assert merges.status_code >= 400 and "has no merges" in merges.text
    finally:
        server.stop()
