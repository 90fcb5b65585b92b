"""No page of another site can change anything on the server (issue 50, item 3).

A page on any site can send a POST to a server on 127.0.0.1: a plain form, or `fetch` in
`no-cors` mode, which needs no preflight. It cannot read the answer, but the write was done:
a corpus was replaced (`replace=true`) from another origin. Every request that changes
something and comes from a page of another origin (its `Origin`, or its `Sec-Fetch-Site`) is
refused with 403, with or without a token, before its body is read; the server's own pages,
and clients that are not pages (curl, scripts), go on as before."""

from __future__ import annotations

import http.server
import threading

import httpx
import pytest

from helpers import Server, make_served_db, problem_of

pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

TOKEN = "origin-test-token-0123456789abcdef"
CORPUS = ("tiny.tsv", b"eng_Latn\trus_Cyrl\nreplaced\t\xd0\xb7\xd0\xb0\xd0\xbc\n")

WRITES = [  # (method, path, what a request sends): every route that changes something
    ("POST", "/api/corpora", {"files": {"file": CORPUS}, "data": {"name": "tiny",
                                                                  "replace": "true"}}),
    ("POST", "/api/runs", {"json": {"sizes": [300]}}),
    ("DELETE", "/api/runs/1", {}),
    ("DELETE", "/api/queue/1", {}),
    ("POST", "/api/tokenize", {"json": {"text": "x", "tokenizer": "cl100k_base"}}),
    ("POST", "/api/compare", {"json": {"texts": {"eng_Latn": "x"}}}),
    ("POST", "/login", {"data": {"token": "x"}}),
]

FOREIGN = [
    {"Origin": "https://evil.example"},
    {"Origin": "null"},  # an opaque origin: a sandboxed frame, a data: URL
    {"Origin": "http://localhost:1"},  # this machine, another port: another origin
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = make_served_db(tmp_path_factory.mktemp("origin"), run=False)
    served = Server(db)
    yield served
    served.stop()


def corpora(client) -> dict:
    return {c["name"]: c["content_hash"] for c in client.get("/api/corpora").json()}


@pytest.mark.slow
@pytest.mark.parametrize("headers", FOREIGN, ids=lambda h: "-".join(h.values()))
@pytest.mark.parametrize(("method", "path", "sent"), WRITES, ids=lambda w: str(w))
def test_a_write_from_another_site_is_refused(server, method, path, sent, headers):
    with httpx.Client(base_url=server.url, timeout=60) as client:
        before = corpora(client)
        answer = client.request(method, path, headers=headers, **sent)
        assert "another site" in problem_of(answer, 403)
        assert corpora(client) == before


def test_the_server_s_own_pages_and_clients_that_are_not_pages_still_write(server):
    with httpx.Client(base_url=server.url, timeout=60) as client:
        own = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
        text = {"text": "the cat", "tokenizer": "cl100k_base"}
        assert client.post("/api/tokenize", json=text, headers=own).status_code == 200
        assert client.post("/api/tokenize", json=text).status_code == 200  # curl: no Origin
        assert client.post("/api/tokenize", json=text,
                           headers={"Sec-Fetch-Site": "none"}).status_code == 200  # typed in
        answer = client.post("/api/corpora", files={"file": ("pairs.tsv", CORPUS[1])},
                             data={"name": "own-page"}, headers=own)
        assert answer.status_code == 201, answer.text
        assert client.get("/").headers["referrer-policy"] == "same-origin"
        assert client.get("/api/runs").headers["referrer-policy"] == "same-origin"


@pytest.mark.slow
def test_a_token_does_not_let_another_site_write(tmp_path):
    server = Server(make_served_db(tmp_path, run=False), "--token", TOKEN)
    try:
        with httpx.Client(base_url=server.url, timeout=60,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            text = {"text": "the cat", "tokenizer": "cl100k_base"}
            assert client.post("/api/tokenize", json=text).status_code == 200
            assert problem_of(client.post("/api/tokenize", json=text,
                                          headers={"Origin": "https://evil.example"}), 403)
    finally:
        server.stop()


class OtherSite:
    """A page of another origin (http://localhost:PORT, where the server is 127.0.0.1): it
    sends the upload that replaced a corpus, and says in its title when the fetch is done."""

    PAGE = """<!doctype html><title>sending</title><script>
    const form = new FormData();
    form.append("file", new Blob(["eng_Latn\\trus_Cyrl\\nreplaced\\tзам\\n"]), "tiny.tsv");
    form.append("name", "tiny");
    form.append("replace", "true");
    fetch("%s/api/corpora", {method: "POST", mode: "no-cors", body: form})
      .then(() => { document.title = "sent"; }, () => { document.title = "failed"; });
    </script>"""

    def __init__(self, target: str):
        page = (self.PAGE % target).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://localhost:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("token", [None, TOKEN])
def test_a_page_of_another_site_cannot_replace_a_corpus_in_chromium(browser, tmp_path, token):
    server = Server(make_served_db(tmp_path, run=False), *(["--token", token] if token else []))
    other = OtherSite(server.url)
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with httpx.Client(base_url=server.url, timeout=60, headers=auth) as client:
            before = corpora(client)
            context = browser.new_context()
            if token:  # signed in to the server in this browser: its cookie would go along
                page = context.new_page()
                page.goto(server.url + "/playground", wait_until="load")
                page.fill("input[name=token]", token)
                page.click("button[type=submit]")
                page.wait_for_url(server.url + "/playground")
            page = context.new_page()
            page.goto(other.url, wait_until="load")
            page.wait_for_function("() => document.title !== 'sending'")
            assert page.title() == "sent"  # the request went out and was answered
            assert corpora(client) == before
            context.close()
    finally:
        other.close()
        server.stop()
