"""The service under hostile clients (issue 37, items 1 to 6, 14 and 21): no client stalls the
others, a request is bounded whole, only the server's own host names are answered, complete
runs are served from documents made once, and a database deleted under the server is said,
never made anew. Each test acts on observed events (a line the server prints, a socket the
server closes), never after a guessed delay."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import socket

import pytest

from helpers import TINY, WAIT, Server, make_served_db

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")


def problem_of(response, status):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()


def address(server: Server) -> tuple[str, int]:
    host, port = server.url.split("//")[1].split(":")
    return host, int(port)


@pytest.fixture
def held(tmp_path):
    """A server whose counting waits for the test (ANALYZER_TEST_HOLD_COUNTING), with two
    counting processes; the test writes a byte to `.pipe` to let one held call go on."""
    db = make_served_db(tmp_path)
    pipe = tmp_path / "hold"
    os.mkfifo(pipe)
    server = Server(db, "--count-processes", "2", env={"ANALYZER_TEST_HOLD_COUNTING": str(pipe)})
    server.pipe = pipe
    yield server
    # Whatever is still held is let go, so that the server can stop.
    writer = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK) if _has_reader(pipe) else None
    if writer is not None:
        os.write(writer, b"x" * 16)
        os.close(writer)
    server.stop()


def _has_reader(pipe) -> bool:
    try:
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        return True
    except OSError:  # ENXIO: nobody has it open to read
        return False


def sockets_of(pid: int) -> int:
    """How many sockets the process has open (its listening one and its connections)."""
    folder = f"/proc/{pid}/fd"
    found = 0
    for name in os.listdir(folder):
        with contextlib.suppress(OSError):  # closed since it was listed
            found += os.readlink(f"{folder}/{name}").startswith("socket:")
    return found


def wait_for_sockets(server: Server, at_least: int) -> None:
    """Until the server holds `at_least` sockets (every client connected), bounded by WAIT."""
    import time

    deadline = time.monotonic() + WAIT
    while sockets_of(server.run.pid) < at_least:
        assert time.monotonic() < deadline, f"the server never held {at_least} sockets"
        time.sleep(0.01)


PROMPT = 20.0
"""A bound on a request that must be answered while others wait 60 s: far above its time (a
few milliseconds), far below theirs, so that an answer only after theirs fails."""


@pytest.mark.slow
def test_busy_counting_threads_stall_nobody_and_one_more_gets_503(held):
    """Items 1 and 2: with every counting process busy and 45 long polls waiting, other requests
    are answered at once; a third counting request is refused with Retry-After."""
    texts = {lang: " ".join(lines) * 20 for lang, lines in TINY.items()}  # past the inline work
    body = {"texts": texts, "run": 1, "tokenizers": ["cl100k_base"], "pieces": True}
    limits = httpx.Limits(max_connections=100)
    with concurrent.futures.ThreadPoolExecutor(60) as pool, \
            httpx.Client(base_url=held.url, timeout=WAIT, limits=limits) as client, \
            httpx.Client(base_url=held.url, timeout=PROMPT) as prompt:
        counting = [pool.submit(client.post, "/api/compare", json=body) for _ in range(2)]
        held.run.wait_for("counting held")
        held.run.wait_for("counting held")  # both counting processes are now busy
        before = sockets_of(held.run.pid)
        changes = prompt.get("/api/runs/1").headers["analyzer-changes"]  # none come: they wait
        polls = [pool.submit(client.get, "/api/runs/1", params={"after": changes, "wait": 60})
                 for _ in range(45)]
        wait_for_sockets(held, before + 45)
        # Answered while the counting processes and the long polls are busy (were the event
        # loop or the thread pool held, these would wait a minute for them).
        assert prompt.get("/api/runs").status_code == 200
        assert prompt.get("/api/runs/1").status_code == 200
        assert prompt.get("/").status_code == 200
        assert not any(poll.done() for poll in polls)  # still waiting
        third = prompt.post("/api/tokenize", json={"text": "x" * 10_000, "tokenizer": "cl100k_base"})
        detail = problem_of(third, 503)
        assert third.headers["retry-after"] == "1" and "try again" in detail["detail"]
        writer = os.open(held.pipe, os.O_WRONLY)
        try:
            os.write(writer, b"xx")
            answers = [future.result() for future in counting]
        finally:
            os.close(writer)
        assert [answer.status_code for answer in answers] == [200, 200]
        assert answers[0].json() == answers[1].json()
        client.close()  # the long polls end with their connections


@pytest.mark.slow
def test_a_request_that_asks_too_much_counting_is_refused_before_it_starts(served):
    with httpx.Client(base_url=served.url, timeout=WAIT) as client:
        text = "the cat sat on the mat. " * 40_000  # 960 KB
        refused = client.post("/api/compare", json={
            "texts": {"eng_Latn": text}, "tokenizers": ["cl100k_base", "gpt2"], "pieces": True})
        assert "at most 1,000,000 with pieces" in problem_of(refused, 422)["detail"]
        refused = client.post("/api/compare", json={
            "texts": {"eng_Latn": text}, "run": 1, "tokenizers": ["cl100k_base", "gpt2"]})
        assert "at most 4,000,000" in problem_of(refused, 422)["detail"]
        counted = client.post("/api/compare", json={"texts": {"eng_Latn": text},
                                                    "tokenizers": ["cl100k_base"]})
        assert counted.status_code == 200, counted.text
        assert counted.json()["rows"][0]["tokens"] > 200_000


@pytest.mark.slow
def test_a_body_sent_slowly_is_cut_off_and_connections_are_bounded(tmp_path):
    """Item 3: a request whose body never finishes is closed at its deadline, like one whose
    headers never finish; past --max-connections, a new connection gets 503 at once."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--max-connections", "12")
    try:
        held = [socket.create_connection(address(server), timeout=WAIT) for _ in range(10)]
        for connection in held:  # complete headers, then one byte of a 1,000-byte body
            connection.sendall(b"POST /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
        extra = [socket.create_connection(address(server), timeout=WAIT) for _ in range(2)]
        over = socket.create_connection(address(server), timeout=WAIT)
        answer = over.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in answer
        assert over.recv(4096) == b""  # and closed
        for connection in held:  # a body that stopped: answered 408, then closed
            assert connection.recv(4096).startswith(b"HTTP/1.1 408")
            assert connection.recv(4096) == b""
            connection.close()
        for connection in extra:  # no request at all: closed by the server at the deadline
            assert connection.recv(4096) == b""
            connection.close()
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            assert client.get("/api/runs").status_code == 200
    finally:
        server.stop()


@pytest.mark.slow
def test_only_the_server_s_own_host_names_are_answered(tmp_path):
    """Item 4: DNS rebinding. A request naming another host is refused on every route (a run
    cannot be started, a text cannot be read); --allow-host adds a name."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--allow-host", "analyzer.internal")
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            port = address(server)[1]
            for host in ("attacker.example", f"attacker.example:{port}", "127.0.0.2"):
                headers = {"Host": host}
                for method, path in (("GET", "/"), ("GET", "/api/corpora/tiny/units/0"),
                                     ("POST", "/api/runs"), ("GET", "/api/runs")):
                    response = client.request(method, path, headers=headers, json={"sizes": [300]})
                    assert "does not answer to the host name" in problem_of(response, 400)["detail"]
            for host in (f"localhost:{port}", f"127.0.0.1:{port}", "analyzer.internal",
                         f"ANALYZER.internal:{port}"):
                assert client.get("/api/corpora", headers={"Host": host}).status_code == 200, host
            assert client.get("/api/runs").json() == []  # no run was started
    finally:
        server.stop()


@pytest.mark.slow
def test_a_complete_run_is_served_from_a_document_made_once_with_an_etag(tmp_path):
    """Item 5. Once made, the document is served as made: even with the run's rows removed
    from under the server (a complete run never changes; this only proves nothing is made
    again), and a client that has it gets 304."""
    from sqlite_utils import Database

    db = make_served_db(tmp_path)
    server = Server(db)
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            first = client.get("/api/runs/1")
            etag = first.headers["etag"]
            page = client.get("/runs/1").text
            raw = Database(db)
            raw.execute("DELETE FROM token_counts")
            raw.conn.commit()
            again = client.get("/api/runs/1")
            assert again.content == first.content and again.headers["etag"] == etag
            assert client.get("/runs/1").text == page
            cached = client.get("/api/runs/1", headers={"If-None-Match": etag})
            assert cached.status_code == 304 and cached.content == b""
            assert client.get("/api/runs/1", headers={"If-None-Match": '"other"'}).status_code == 200
    finally:
        server.stop()


def test_many_clients_asking_for_one_run_at_once_get_one_document(served):
    with httpx.Client(base_url=served.url, timeout=WAIT) as client, \
            concurrent.futures.ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: client.get("/api/runs/1"), range(40)))
    assert {answer.status_code for answer in answers} == {200}
    assert len({answer.content for answer in answers}) == 1


@pytest.mark.slow
def test_a_deleted_database_is_said_and_never_made_anew(tmp_path):
    """Item 6: every request says the database is gone (503, no traceback in the log), and
    starting a run creates no new database."""
    db = make_served_db(tmp_path)
    server = Server(db)
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            assert client.head("/api/runs").status_code == 200
            for name in (db.name, f"{db.name}-wal", f"{db.name}-shm"):
                (tmp_path / name).unlink(missing_ok=True)
            for method, path in (("GET", "/api/runs"), ("GET", "/api/runs/1"), ("GET", "/"),
                                 ("POST", "/api/runs"), ("POST", "/api/tokenize")):
                body = {"sizes": [300]} if path == "/api/runs" else {"text": "a", "run": 1, "size": 300}
                response = client.request(method, path, json=body)
                assert "was deleted while in use" in problem_of(response, 503)["detail"], path
            assert not db.exists()
    finally:
        code, _, stderr = server.stop()
    assert "Traceback" not in stderr


def test_head_answers_every_get_route(served):
    with httpx.Client(base_url=served.url, timeout=WAIT) as client:
        for path in ("/", "/api/runs", "/api/runs/1", "/api/corpora", "/runs/1", "/playground",
                     "/static/playground.js", "/api/runs/1/export"):
            head, get = client.head(path), client.get(path)
            assert head.status_code == get.status_code == 200, path
            assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]
        assert client.head("/api/runs/99").status_code == 404


@pytest.mark.slow
@pytest.mark.parametrize("body, field", [
    ({"sizes": [300], "tokenizers": ["hf:../.."]}, "tokenizers"),
    ({"sizes": [], "extend": ["hf:../.."], "added": [10]}, "extend"),
    ({"sizes": [300], "tokenizers": ["hf:org/name@../../etc"]}, "tokenizers"),
])
def test_run_requests_that_name_no_hub_repository_are_refused(served, body, field):
    """Item 14: never a 500."""
    with httpx.Client(base_url=served.url, timeout=WAIT) as client:
        answer = problem_of(client.post("/api/runs", json=body), 422)
        assert answer.get("setting") == field, answer
        assert "not a Hugging Face repository" in answer["detail"] or "not a revision" in answer["detail"]


@pytest.mark.parametrize("field, value", [("holdout", "NaN"), ("holdout", "Infinity"),
                                          ("target", "-Infinity"), ("target", "NaN")])
def test_run_requests_with_numbers_json_cannot_write_are_refused(served, field, value):
    extra = ', "extend": ["cl100k_base"], "added": [5]' if field == "target" else ""
    content = f'{{"sizes": [300], "{field}": {value}{extra}}}'
    with httpx.Client(base_url=served.url, timeout=WAIT) as client:
        answer = client.post("/api/runs", content=content,
                             headers={"content-type": "application/json"})
        assert problem_of(answer, 422)["setting"] == field
        assert answer.json()["value"] == str(json.loads(value))


def test_interrupting_a_complete_run_says_it_is_not_in_progress(served):
    """Item 21: not "Run not complete"."""
    with httpx.Client(base_url=served.url, timeout=WAIT) as client:
        answer = problem_of(client.delete("/api/runs/1"), 409)
        assert answer["title"] == "Run not in progress"
        assert "run 1 is complete: this server is not running it" in answer["detail"]
