"""Signing in and out in headless Chromium (issue 68, item 3): the sign-in page's script keeps
the session's write key where only this server's pages can read it, the pages write with it,
a sign-out in one tab ends the session in every tab (said there, not retried for ever), and a
page on another port of the same host, which the browser sends the cookie to, can neither
read the key nor write with the cookie. And the run form sends an Idempotency-Key (item 4)."""

from __future__ import annotations

import http.server
import threading

import pytest
from test_serve_browser import watched

from helpers import Server, dump, make_served_db, problem_of

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

TOKEN = "a-browser-session-token-0123456789"
WAIT_MS = 120_000  # a bound against a hang, never a pace: each wait ends on what the page shows
KEY = "() => window.localStorage.getItem('analyzer-write-key')"


def watched_tab(context, url: str):
    """A tab of `context` (tabs of one browser share its cookies and storage), with its
    problems kept as `watched` keeps a page's."""
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    origin = "/".join(url.split("/")[:3])
    page.on("request", lambda r: problems.append(f"request: {r.url}")
            if not r.url.startswith((origin, "data:", "blob:")) else None)
    return page, problems


def sign_in(page, url: str, path: str) -> None:
    page.goto(url + path, wait_until="load")
    page.wait_for_url("**/login?next=*")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    page.wait_for_url(url + path)


@pytest.mark.slow
def test_sign_in_write_then_sign_out_in_one_tab_ends_the_other(browser, tmp_path):
    server = Server(make_served_db(tmp_path, run=False), "--token", TOKEN)
    try:
        context = browser.new_context()
        page, problems = watched_tab(context, server.url)
        page.set_default_timeout(WAIT_MS)
        sign_in(page, server.url, "/runs/new")
        assert page.evaluate(KEY)  # kept by the sign-in page's script
        assert "analyzer_session" not in page.evaluate("() => document.cookie")  # HttpOnly
        assert page.locator("nav form.sign-out button").inner_text() == "Sign out"

        other, other_problems = watched_tab(context, server.url)  # a second tab, signed in too
        other.set_default_timeout(WAIT_MS)
        other.goto(server.url + "/corpora/new", wait_until="load")
        assert other.url == server.url + "/corpora/new"

        page.click("nav form.sign-out button")  # signed out in the first tab
        page.wait_for_url("**/login?signed_out=1")
        assert "You are signed out." in page.inner_text("#signin-error")
        assert page.evaluate(KEY) is None  # the key dropped with the session

        other.set_input_files("#upload-file", files=[{"name": "pairs.tsv", "mimeType": "text/plain",
                                                      "buffer": b"eng_Latn\tfra_Latn\na\tb\n"}])
        other.click("#upload button[type=submit]")
        other.wait_for_selector("#form-error:not([hidden])")
        assert "Your session has ended" in other.inner_text("#form-error")
        other.goto(server.url + "/corpora/new", wait_until="load")
        other.wait_for_url("**/login?next=%2Fcorpora%2Fnew")  # the cookie is gone: sign in again
        assert other.locator("input[name=token]").is_visible()
        context.close()
        # The second tab's refused upload (401) is in its console; nothing else went wrong.
        assert problems == [] and all("401" in p for p in other_problems), other_problems
    finally:
        server.stop()


class OtherPort:
    """A server on another port of 127.0.0.1: the same host, so the browser sends it the
    analyzer's cookie. It keeps the Cookie header it was sent, and its page says what it can
    read of the analyzer's origin's storage (nothing: another origin)."""

    PAGE = b"""<!doctype html><title>other</title><script>
    document.title = 'key: ' + window.localStorage.getItem('analyzer-write-key');
    </script>"""

    def __init__(self):
        received = self.received = []
        page = self.PAGE

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                received.append((self.path, self.headers.get("Cookie", "")))
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.slow
def test_another_port_receives_the_cookie_but_can_neither_read_the_key_nor_write(browser, tmp_path):
    """What a browser cannot separate (docs/how-to/serve.md): the analyzer's cookie goes to a
    server on another port of the same host. That server, replaying it with any headers it
    likes, reads but cannot write; its page cannot read the write key."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--token", TOKEN)
    other = OtherPort()
    try:
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        sign_in(page, server.url, "/")
        page.goto(other.url, wait_until="load")
        page.wait_for_function("() => document.title.startsWith('key: ')")
        assert page.title() == "key: null"
        name = f"analyzer_session_{server.url.rsplit(':', 1)[1]}"
        [sent] = [cookie for path, cookie in other.received if path == "/"]
        assert f"{name}=" in sent  # the browser sent it there
        before = dump(db)
        with httpx.Client(base_url=server.url, timeout=60, headers={"Cookie": sent}) as replay:
            assert replay.get("/api/corpora").status_code == 200
            upload = replay.post("/api/corpora", headers={"Origin": server.url},
                                 files={"file": ("x.tsv", b"eng_Latn\tfra_Latn\na\tb\n")})
            assert problem_of(upload, 403)
        assert dump(db) == before
        context.close()
    finally:
        other.close()
        server.stop()


@pytest.mark.slow
def test_the_run_form_sends_one_idempotency_key_per_settings(browser, tmp_path):
    server = Server(make_served_db(tmp_path, run=False), env={"ANALYZER_TEST_STALL": "1"})
    try:
        page, problems = watched(browser, server.url)
        page.set_default_timeout(WAIT_MS)
        keys: list[str | None] = []
        page.on("request", lambda request: keys.append(request.headers.get("idempotency-key"))
                if request.method == "POST" and request.url.endswith("/api/runs") else None)
        page.goto(server.url + "/runs/new", wait_until="load")
        page.check("#goal input[value=train]")  # the form's first question
        page.fill("#setting-sizes", "100")  # refused: below the byte alphabet
        for _ in range(2):  # sent twice as it is: the same key
            page.click("#new-run button[type=submit]")
            page.wait_for_selector("#setting-sizes-error:not([hidden])")
            page.wait_for_function("() => !document.querySelector('#new-run button').disabled")
        page.fill("#setting-sizes", "300")
        page.click("#new-run button[type=submit]")
        page.wait_for_url("**/runs/1")
        assert len(keys) == 3 and keys[0] and keys[0] == keys[1] != keys[2] and keys[2]
        assert all("422" in problem for problem in problems), problems
    finally:
        server.stop()
