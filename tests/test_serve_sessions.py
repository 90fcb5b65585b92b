"""Sessions as the web does them (issue 68, item 3). Signed in on a server with a token, a
browser's cookie was the same value for every sign-in, never expired, could not be signed out,
went to every port of the host, and replayed with curl uploaded a corpus: a request without
Origin passed the cross-site check.

Now each sign-in is a random session the server keeps, with an expiry and a sign-out; its
cookie is named for the server's port; and a cookie alone only reads: a write signed in by
cookie also needs the session's write key (which the sign-in gave the page's script) and the
server's own Origin. The browser's side (the key kept where another port cannot read it) is
tests/test_serve_sessions_browser.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import Server, dump, make_served_db, problem_of

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

TOKEN = "a-session-test-token-0123456789"
OTHER_TOKEN = "another-server-token-9876543210"
PAIRS = ("pairs.tsv", b"eng_Latn\tfra_Latn\nthe cat\tle chat\n")
PAGE = {"Accept": "text/html,application/xhtml+xml"}
WAIT = 60


def port_of(server: Server) -> str:
    return server.url.rsplit(":", 1)[1]


def sign_in(client, token: str = TOKEN) -> str:
    """Sign in as the page's script does; the session's write key."""
    answer = client.post("/login", data={"token": token, "next": "/"},
                         headers={"Accept": "application/json"})
    assert answer.status_code == 200, answer.text
    return answer.json()["write_key"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = make_served_db(tmp_path_factory.mktemp("sessions"), run=False)
    served = Server(db, "--token", TOKEN)
    served.db = db
    yield served
    served.stop()


@pytest.mark.slow
def test_each_sign_in_is_a_random_session_with_a_cookie_named_for_the_port(server):
    name = f"analyzer_session_{port_of(server)}"
    values = []
    for _ in range(2):
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            answer = client.post("/login", data={"token": TOKEN, "next": "/playground"})
            assert answer.status_code == 303 and answer.headers["location"] == "/playground"
            cookie = answer.headers["set-cookie"]
            assert cookie.startswith(f"{name}=")
            for attribute in ("HttpOnly", "Path=/", "Max-Age=43200"):
                assert attribute in cookie, cookie
            assert "samesite=strict" in cookie.lower() and "Domain" not in cookie
            values.append(client.cookies[name])
            assert client.get("/api/runs").status_code == 200
    assert values[0] != values[1] and TOKEN not in values[0] + values[1]
    for value in values:  # both sessions live on: two browsers, signed in each
        assert httpx.get(server.url + "/api/runs", cookies={name: value}, timeout=WAIT).status_code == 200


@pytest.mark.slow
def test_a_wrong_token_is_refused_in_the_form_and_to_the_sign_in_script(server):
    page = httpx.post(server.url + "/login", data={"token": "not-the-token-at-all"}, timeout=WAIT)
    assert page.status_code == 401 and "not the token of this server" in page.text
    assert "set-cookie" not in page.headers
    script = httpx.post(server.url + "/login", data={"token": "not-the-token-at-all"},
                        headers={"Accept": "application/json"}, timeout=WAIT)
    assert "not the token of this server" in problem_of(script, 401)  # a problem, as the API's
    assert "set-cookie" not in script.headers


@pytest.mark.slow
def test_a_replayed_cookie_reads_but_never_writes(server):
    """What another program (or another port's server) holding the cookie can do: read, and
    nothing else, with or without an Origin it forges. A page of this server, sending the
    write key from its own origin, writes; so does a program with the bearer token."""
    with httpx.Client(base_url=server.url, timeout=WAIT) as browser:
        key = sign_in(browser)
        cookies = dict(browser.cookies)
    before = dump(server.db)
    own = {"Origin": server.url}
    with httpx.Client(base_url=server.url, timeout=WAIT, cookies=cookies) as replay:
        assert replay.get("/api/corpora").status_code == 200  # reading: the cookie suffices
        for headers in ({}, own, {"X-Analyzer-Write-Key": key},
                        {**own, "X-Analyzer-Write-Key": "not-the-key"}):
            upload = replay.post("/api/corpora", files={"file": PAIRS}, data={"name": "replayed"},
                                 headers=headers)
            assert "signed in by the session cookie alone" in problem_of(upload, 403), headers
            assert problem_of(replay.post("/api/runs", json={"sizes": [300]}, headers=headers), 403)
            assert problem_of(replay.delete("/api/queue/1", headers=headers), 403)
        assert dump(server.db) == before  # nothing stored, queued or cancelled
        written = replay.post("/api/corpora", files={"file": PAIRS}, data={"name": "own-page"},
                              headers={**own, "X-Analyzer-Write-Key": key})
        assert written.status_code == 201, written.text
    with httpx.Client(base_url=server.url, timeout=WAIT,
                      headers={"Authorization": f"Bearer {TOKEN}"}) as program:
        assert program.post("/api/corpora", files={"file": PAIRS},
                            data={"name": "program"}).status_code == 201


@pytest.mark.slow
def test_signing_out_ends_the_session_for_every_copy_of_its_cookie(server):
    name = f"analyzer_session_{port_of(server)}"
    with httpx.Client(base_url=server.url, timeout=WAIT) as browser:
        sign_in(browser)
        value = browser.cookies[name]
        out = browser.post("/logout", headers={"Origin": server.url})
        assert out.status_code == 303 and out.headers["location"] == "/login?signed_out=1"
        assert f'{name}=""' in out.headers["set-cookie"] and "Max-Age=0" in out.headers["set-cookie"]
        assert "You are signed out." in browser.get("/login", params={"signed_out": 1}).text
    with httpx.Client(base_url=server.url, timeout=WAIT, cookies={name: value}) as copy:
        ended = copy.get("/api/runs")  # the same cookie, kept elsewhere: ended too
        assert "your session has ended" in problem_of(ended, 401)
        page = copy.get("/", headers=PAGE)
        assert page.status_code == 303 and page.headers["location"] == "/login?next=%2F&ended=1"
        assert "Your session has ended" in copy.get(page.headers["location"]).text
    with httpx.Client(base_url=server.url, timeout=WAIT) as browser:  # the API's sign-out
        sign_in(browser)
        assert browser.delete("/api/session").json() == {"signed_out": True}
        assert browser.get("/api/runs").status_code == 401
        assert browser.delete("/api/session").json() == {"signed_out": False}
    with httpx.Client(base_url=server.url, timeout=WAIT) as browser:  # one sign-in, one session
        sign_in(browser)
        first = browser.cookies[name]
        sign_in(browser)
        assert browser.cookies[name] != first
        assert httpx.get(server.url + "/api/runs", cookies={name: first},
                         timeout=WAIT).status_code == 401


@pytest.mark.slow
def test_a_second_server_on_another_port_keeps_its_sessions_apart(server, tmp_path):
    """A browser sends every cookie of 127.0.0.1 to each port (so does httpx's jar): signed in
    on both, each server finds its own cookie by its name, and neither takes the other's
    session (nor its write key) for one of its own."""
    other = Server(make_served_db(tmp_path, run=False), "--token", OTHER_TOKEN)
    try:
        with httpx.Client(timeout=WAIT) as browser:  # one jar for the host, as a browser has
            here = browser.post(server.url + "/login", data={"token": TOKEN},
                                headers={"Accept": "application/json"}).json()["write_key"]
            there = browser.post(other.url + "/login", data={"token": OTHER_TOKEN},
                                 headers={"Accept": "application/json"}).json()["write_key"]
            names = sorted(cookie.name for cookie in browser.cookies.jar)
            assert names == sorted([f"analyzer_session_{port_of(server)}",
                                    f"analyzer_session_{port_of(other)}"])
            assert browser.get(server.url + "/api/runs").status_code == 200
            assert browser.get(other.url + "/api/runs").status_code == 200
            assert problem_of(browser.post(other.url + "/api/runs", json={"sizes": [300]},
                                           headers={"Origin": other.url,
                                                    "X-Analyzer-Write-Key": here}), 403)
            mine = browser.cookies.get(f"analyzer_session_{port_of(server)}")
            assert there != here
        stolen = {f"analyzer_session_{port_of(other)}": mine}  # one server's session, offered
        assert httpx.get(other.url + "/api/runs", cookies=stolen, timeout=WAIT).status_code == 401
    finally:
        other.stop()


@pytest.mark.slow
def test_a_restart_ends_every_session(tmp_path):
    db = make_served_db(tmp_path, run=False)
    first = Server(db, "--token", TOKEN)
    try:
        with httpx.Client(base_url=first.url, timeout=WAIT) as browser:
            sign_in(browser)
            cookies = dict(browser.cookies)
    finally:
        first.stop()
    second = Server(db, "--token", TOKEN)  # on another port: the cookie offered under its name
    try:
        renamed = {f"analyzer_session_{port_of(second)}": value for value in cookies.values()}
        assert "your session has ended" in problem_of(
            httpx.get(second.url + "/api/runs", cookies=renamed, timeout=WAIT), 401)
    finally:
        second.stop()


@pytest.mark.slow
def test_a_session_expires_after_its_lifetime(tmp_path):
    """In this process, its clock the test's: signed in, the session reads and writes; past
    its lifetime, it is gone (401, and a page goes to the sign-in, saying why)."""
    from starlette.testclient import TestClient

    from analyzer.limits import SESSION_LIFETIME
    from analyzer.serve import create_app

    now = [1000.0]
    app = create_app(Path(tmp_path / "a.db"), token=TOKEN, allowed_hosts=None)
    app.state.sessions.clock = lambda: now[0]
    with TestClient(app, base_url="http://127.0.0.1:8000") as browser:
        key = sign_in(browser)
        assert browser.get("/api/runs").status_code == 200
        write = {"Origin": "http://127.0.0.1:8000", "X-Analyzer-Write-Key": key}
        assert browser.post("/api/tokenize", json={"text": "a", "tokenizer": "gpt2"},
                            headers=write).status_code == 200
        now[0] += SESSION_LIFETIME - 1
        assert browser.get("/api/runs").status_code == 200
        now[0] += 1
        assert "your session has ended" in problem_of(browser.get("/api/runs"), 401)
        page = browser.get("/runs/new", headers=PAGE, follow_redirects=False)
        assert page.headers["location"] == "/login?next=%2Fruns%2Fnew&ended=1"
        assert problem_of(browser.post("/api/tokenize", json={"text": "a", "tokenizer": "gpt2"},
                                       headers=write), 401)


def test_sessions_are_random_bounded_and_kept_as_digests():
    from analyzer.serve.sessions import Sessions

    sessions = Sessions(lifetime=60, most=3, clock=lambda: 0.0)
    started = [sessions.start() for _ in range(4)]
    assert len({s.id for s in started}) == 4 and len({s.write_key for s in started}) == 4
    assert sessions.find(started[0].id) is None  # the oldest ended for the fourth
    assert all(sessions.find(s.id) == s for s in started[1:])
    assert not any(s.id in key for s in started for key in sessions.kept)  # digests only
