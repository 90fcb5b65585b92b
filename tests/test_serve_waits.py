"""What the service does while it waits (issue 50, items 4-6): on another process's write lock
(a bounded wait, then 503 with Retry-After, nothing created, and /readyz says so), on uploads
beyond its bound (refused from their headers, before any body is read), and on slow bodies
(timed by their progress, and answered 408 when cut)."""

from __future__ import annotations

import socket
import sqlite3
import time
from urllib.parse import urlsplit

import pytest

from helpers import Server, dump, invoke, make_served_db, problem_of

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

BOUNDARY = "b0undary"
WAIT = 60  # seconds a socket waits for an answer: a guard against a hang, never a measure


def tsv(pairs: int = 2) -> str:
    """A small TSV corpus of `pairs` lines."""
    return "eng_Latn\tfra_Latn\n" + "".join(f"the cat {i}\tle chat {i}\n" for i in range(pairs))


def upload_body(pairs: int = 2, name: str = "held") -> bytes:
    """A multipart upload of `tsv(pairs)` named `name`."""
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"pairs.tsv\"\r\n\r\n{tsv(pairs)}\r\n"
            f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n{name}\r\n"
            f"--{BOUNDARY}--\r\n").encode()


def upload_head(server: Server, length: int, *, expect_continue: bool = False) -> bytes:
    host = urlsplit(server.url).netloc
    return (f"POST /api/corpora HTTP/1.1\r\nHost: {host}\r\nContent-Length: {length}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            + ("Expect: 100-continue\r\n" if expect_continue else "") + "\r\n").encode()


def connect(server: Server) -> socket.socket:
    parts = urlsplit(server.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=WAIT)


def answer_of(connection: socket.socket) -> bytes:
    """What the server sends until it closes the connection or ends one answer."""
    data = b""
    while b"\r\n\r\n" not in data or not _complete(data):
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def held_upload(server: Server, body: bytes) -> socket.socket:
    """An upload whose headers are sent and whose slot is taken, its body not yet sent: the
    server says `100 Continue` when the route first asks for the body, which is after the
    upload's slot and space were taken."""
    connection = connect(server)
    connection.sendall(upload_head(server, len(body), expect_continue=True))
    assert connection.recv(4096).startswith(b"HTTP/1.1 100")
    return connection


# Item 4: another process's write lock.

@pytest.mark.slow
def test_writes_wait_a_bounded_time_on_another_process_s_lock_then_503_and_nothing_is_created(tmp_path):
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--lock-wait", "0.5")
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            assert client.get("/readyz").status_code == 200
            before = dump(db)
            holder = sqlite3.connect(db, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # another process's write lock, held
            try:
                refused = [
                    client.post("/api/runs", json={"sizes": [300]}),
                    client.post("/api/corpora", files={"file": ("pairs.tsv", tsv())},
                                data={"name": "new"}),
                    client.delete("/api/queue/1"),
                ]
                ready = client.get("/readyz")
                listed = client.get("/api/runs")  # reads still answer
            finally:
                holder.rollback()
                holder.close()
            for answer in refused:
                detail = problem_of(answer, 503)
                assert "locked by another process" in detail and "--lock-wait" in detail, detail
                assert int(answer.headers["retry-after"]) > 0
                assert str(tmp_path) not in detail
            assert "writes are blocked" in problem_of(ready, 503) and ready.headers["retry-after"]
            assert listed.status_code == 200
            assert dump(db) == before  # nothing created that the client was told failed
            assert client.get("/api/queue").json() == [] or client.get("/api/queue").status_code == 200
            assert client.get("/readyz").status_code == 200  # the lock gone, ready again
    finally:
        server.stop()


# Item 5: uploads refused before their bodies are read.

@pytest.mark.slow
def test_an_upload_beyond_the_number_read_at_once_is_refused_before_its_body(tmp_path):
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--max-corpus-bytes", "100000")
    try:
        bodies = [upload_body(name=f"held{i}") for i in range(2)]
        held = [held_upload(server, body) for body in bodies]
        extra = connect(server)
        extra.sendall(upload_head(server, 90_000))  # headers only: no body is ever sent
        answer = answer_of(extra)
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after:" in answer.lower(), answer
        assert b"as many as this server reads at once" in answer
        for connection, body in zip(held, bodies, strict=True):
            connection.sendall(body)
            assert answer_of(connection).startswith(b"HTTP/1.1 201")
            connection.close()
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:  # the slots are free again
            again = client.post("/api/corpora", files={"file": ("pairs.tsv", tsv())},
                                data={"name": "after"})
            assert again.status_code == 201, again.text
    finally:
        server.stop()


@pytest.mark.slow
def test_uploads_together_are_bounded_by_their_temporary_space(tmp_path):
    # One upload of at most 1,000 bytes may need 3,000 (its body twice, a zip's files): the
    # space holds one large upload, and not a small one beside it.
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--max-corpus-bytes", "1000", "--max-upload-space", "3200")
    try:
        large = upload_body(pairs=35, name="large")
        assert 900 < len(large) <= 1000
        held = held_upload(server, large)
        small = connect(server)
        small.sendall(upload_head(server, len(upload_body())))
        answer = answer_of(small)
        assert answer.startswith(b"HTTP/1.1 503") and b"temporary space" in answer, answer
        held.sendall(large)
        assert answer_of(held).startswith(b"HTTP/1.1 201")
    finally:
        server.stop()


def test_an_upload_space_too_small_for_one_upload_is_refused_at_start(tmp_path):
    result = invoke(tmp_path / "a.db", "serve", "--port", "0", "--max-corpus-bytes", "1000",
                    "--max-upload-space", "2000")
    assert result.exit_code not in (0, 70)
    assert "--max-upload-space 2,000 cannot hold one upload" in result.output, result.output


# Item 6: a body timed by its progress.

@pytest.mark.slow
def test_an_honest_slow_upload_is_not_cut_off_and_a_stalled_one_is_answered_408(tmp_path):
    db = make_served_db(tmp_path, run=False)
    # Windows of 1 s, at least 1,000 bytes a second: the slow upload sends about 4,000 bytes
    # a second, for four windows; the stalled one sends nothing after its start.
    server = Server(db, "--request-timeout", "1", "--min-body-rate", "1000",
                    "--max-corpus-bytes", "100000")
    try:
        body = upload_body(pairs=700, name="slow")
        slow = connect(server)
        slow.sendall(upload_head(server, len(body)))
        for start in range(0, len(body), 400):
            slow.sendall(body[start:start + 400])
            time.sleep(0.1)  # the pace of a slow link (the test's input, not a wait on the server)
        assert len(body) / 400 * 0.1 > 3  # longer than three windows
        assert answer_of(slow).startswith(b"HTTP/1.1 201")

        stalled = connect(server)
        stalled.sendall(upload_head(server, len(body)) + body[:100])
        answer = answer_of(stalled)  # the server's deadline is the event awaited
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"slower than 1,000 bytes a second" in answer and b"--min-body-rate" in answer
        assert stalled.recv(4096) == b""  # and closed
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            names = [corpus["name"] for corpus in client.get("/api/corpora").json()]
        assert "slow" in names and names.count("slow") == 1
    finally:
        server.stop()
