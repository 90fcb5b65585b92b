"""What the service does while it waits (issue 50, items 4-6): on another process's write lock
(a bounded wait, then 503 with Retry-After, nothing created, and /readyz says so), on uploads
beyond its bound (refused from their headers, before any body is read), and on slow bodies
(timed by their progress, and answered 408 when cut)."""

from __future__ import annotations

import socket
import sqlite3
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
            assert client.get("/api/queue").json() == []  # no run was queued either
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

class Clock:
    """The protocol's loop with its timers held here: a test fires a connection's deadline
    when it chooses (`fire`), so no test waits on the clock."""

    def __init__(self, loop):
        self.loop, self.timers = loop, []

    def call_later(self, delay, callback, *args):
        timer = self.loop.call_later(3600, callback, *args)  # never by itself: fired below
        self.timers.append((timer, callback, args))
        return timer

    def fire(self):
        """Run the connection's armed deadline (the last timer not cancelled)."""
        timer, callback, args = next(t for t in reversed(self.timers) if not t[0].cancelled())
        timer.cancel()
        callback(*args)

    def __getattr__(self, name):
        return getattr(self.loop, name)


class Transport:
    """What the protocol writes, and whether it closed the connection."""

    def __init__(self):
        import asyncio

        self.written, self.closed = b"", False
        self.wrote = asyncio.Event()  # set by each write: what a test awaits

    def write(self, data):
        self.written += data
        self.wrote.set()

    def close(self):
        self.closed = True

    def is_closing(self):
        return self.closed

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 2)}.get(name, default)

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass


async def read_whole_body(scope, receive, send):
    """An application that reads its request's body, then answers 200 with its length."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(len(body)).encode()})


async def _connection(min_body_rate: int):
    import asyncio

    import uvicorn
    from uvicorn.server import ServerState

    from analyzer.serve.connections import protocol_class

    loop = asyncio.get_running_loop()
    clock = Clock(loop)
    config = uvicorn.Config(read_whole_body, log_level="warning", lifespan="off")
    protocol = protocol_class(10, request_timeout=1.0, min_body_rate=min_body_rate)(
        config=config, server_state=ServerState(), app_state={}, _loop=clock)
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport, clock


def test_a_body_is_timed_by_its_progress_window_by_window():
    """Item 6: a 10 s limit on the whole request cut an honest slow upload (1.5 MB/s) with no
    answer. Now each window asks only for the least rate: a body that brings that much in every
    window goes on for as many windows as it needs; one that stops is answered 408, then closed.
    The windows are fired by the test, one after another (no wait on the clock)."""
    import asyncio

    async def scenario():
        protocol, transport, clock = await _connection(min_body_rate=100)
        pieces = [b"x" * 150 for _ in range(5)]
        protocol.data_received(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: "
                               + str(150 * len(pieces) + 150).encode() + b"\r\n\r\n")
        for piece in pieces:  # 150 bytes a window, over the least of 100: five windows pass
            protocol.data_received(piece)
            clock.fire()
            assert not transport.closed and transport.written == b""
        clock.fire()  # a window with nothing: too slow
        assert transport.written.startswith(b"HTTP/1.1 408 Request Timeout")
        assert b"slower than 100 bytes a second" in transport.written and transport.closed

        protocol, transport, clock = await _connection(min_body_rate=100)
        protocol.data_received(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 300"
                               b"\r\n\r\n" + b"x" * 150)
        clock.fire()
        protocol.data_received(b"x" * 150)  # the whole body, over two windows
        while not transport.written.endswith(b"0\r\n\r\n"):  # the application's whole answer
            transport.wrote.clear()
            await asyncio.wait_for(transport.wrote.wait(), WAIT)
        assert transport.written.startswith(b"HTTP/1.1 200") and b"\r\n300\r\n" in transport.written
        clock.fire()  # the answer is sent: the connection idles now, and is closed at its deadline
        assert transport.closed and b"408" not in transport.written

    asyncio.run(scenario())


def test_a_stalled_upload_is_answered_408_by_a_real_server(tmp_path):
    """Item 6, end to end: an upload that stops after its first bytes gets a 408 that says why
    (it was dropped without an answer), then the connection closes. The server's deadline is
    the event awaited."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--request-timeout", "1", "--min-body-rate", "1000",
                    "--max-corpus-bytes", "100000")
    try:
        body = upload_body(pairs=700, name="stalled")
        stalled = connect(server)
        stalled.sendall(upload_head(server, len(body)) + body[:100])
        answer = answer_of(stalled)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"slower than 1,000 bytes a second" in answer and b"--min-body-rate" in answer
        assert stalled.recv(4096) == b""  # and closed
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            assert "stalled" not in [c["name"] for c in client.get("/api/corpora").json()]
    finally:
        server.stop()
