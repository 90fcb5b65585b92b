"""The service's queue (issue 43): runs asked for while one is in progress wait in the
database, in order, with their positions; a waiting one can be cancelled; each starts when the
one before ends; a full queue is refused; and a restarted server resumes the queue."""

from __future__ import annotations

import pytest

from helpers import TINY, Server, make_served_db, problem_of, wait_for_progress, wait_for_status

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

STALL = {"ANALYZER_TEST_STALL": "1"}  # every training waits once it reports, until stopped
SLOW = {"sizes": [60000], "jobs": 1, "per_language": False}
QUICK = {"sizes": [300], "jobs": 1, "per_language": False}


def wait_for_queued(client, queued_id, wanted):
    """Long-poll the queued run until its status is one of `wanted`."""
    after = None
    for _ in range(200):
        response = client.get(f"/api/queue/{queued_id}",
                              params={} if after is None else {"after": after, "wait": 30})
        body = response.json()
        if body["status"] in wanted:
            return body
        after = int(response.headers["analyzer-changes"])
    raise AssertionError(f"queued run {queued_id} stayed {body['status']}")


@pytest.mark.slow
def test_runs_wait_in_order_can_be_cancelled_and_start_when_the_one_before_ends(tmp_path):
    db = make_served_db(tmp_path, run=False)
    server = Server(db, env=STALL)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            first = client.post("/api/runs", json=SLOW)
            assert first.status_code == 202 and first.json()["status"] == "running", first.text
            running = first.json()["run"]
            wait_for_progress(client, running)
            queued = [client.post("/api/runs", json={**QUICK, "seed": seed}).json() for seed in range(3)]
            assert [q["position"] for q in queued] == [1, 2, 3]
            assert all(q["status"] == "waiting" and q["corpus"] == "tiny" for q in queued)
            assert queued[0]["settings"]["seed"] == 0 and queued[0]["url"] == f"/api/queue/{queued[0]['id']}"

            cancelled = client.delete(f"/api/queue/{queued[1]['id']}")
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
            assert "only a waiting one" in problem_of(client.delete(f"/api/queue/{queued[1]['id']}"), 409)
            waiting = client.get("/api/queue").json()
            assert [(q["id"], q["position"]) for q in waiting] == [(queued[0]["id"], 1), (queued[2]["id"], 2)]
            assert len(client.get("/api/queue", params={"all": True}).json()) == 3
            assert "no queued run 999" in problem_of(client.get("/api/queue/999"), 404)

            # Bad settings are refused now, not when their turn comes; nothing is queued.
            assert "unknown language code 'xxx_Zzzz'" in problem_of(client.post("/api/runs", json={
                **QUICK, "languages": ["xxx_Zzzz"]}), 422)
            assert len(client.get("/api/queue").json()) == 2

            stopped = client.delete(f"/api/runs/{running}")  # the next starts when this ends
            assert stopped.json()["status"] == "interrupted"
            started = wait_for_queued(client, queued[0]["id"], {"started", "refused"})
            assert started["status"] == "started" and started["run"] > running, started
            assert started["position"] is None
            assert client.get("/api/queue").json()[0]["position"] == 1  # the third, next now
            assert "started as run" in problem_of(client.delete(f"/api/queue/{queued[0]['id']}"), 409)
            wait_for_progress(client, started["run"])
            client.delete(f"/api/runs/{started['run']}")
            third = wait_for_queued(client, queued[2]["id"], {"started", "refused"})
            assert third["status"] == "started" and third["run"] > started["run"]
            client.delete(f"/api/runs/{third['run']}")
    finally:
        code, _, stderr = server.stop()
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_a_full_queue_is_refused_with_retry_after_and_bad_settings_never_wait(tmp_path):
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--max-queue", "1", env=STALL)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            running = client.post("/api/runs", json=SLOW).json()["run"]
            wait_for_progress(client, running)
            detail = problem_of(client.post("/api/runs", json={**QUICK, "pivot": "xxx_Latn"}), 422)
            assert "xxx_Latn" in detail, detail
            assert client.get("/api/queue").json() == []
            assert client.post("/api/runs", json=QUICK).json()["position"] == 1
            full = client.post("/api/runs", json=QUICK)
            assert "--max-queue" in problem_of(full, 503) and full.headers["retry-after"] == "60"
            client.delete(f"/api/runs/{running}")
    finally:
        server.stop()


@pytest.mark.slow
def test_a_queued_run_survives_a_restart_and_the_next_server_runs_it(tmp_path):
    db = make_served_db(tmp_path, run=False)
    server = Server(db, env=STALL)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            running = client.post("/api/runs", json=SLOW).json()["run"]
            wait_for_progress(client, running)
            queued = client.post("/api/runs", json=QUICK).json()
            assert queued["status"] == "waiting"
    finally:
        server.stop()  # the run in progress is interrupted; the queued one waits on disk
    server = Server(db)  # a new server, trainings no longer held: it resumes the queue
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert client.get(f"/api/runs/{running}").json()["status"] == "interrupted"
            started = wait_for_queued(client, queued["id"], {"started", "refused"})
            assert started["status"] == "started", started
            done = wait_for_status(client, started["run"], {"complete", "failed", "interrupted"})
            assert done["status"] == "complete", done
            assert {r["vocab"] for r in done["records"]} >= {"shared"}
            assert client.get("/api/queue").json() == []
    finally:
        code, _, stderr = server.stop()
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_a_queued_run_whose_check_fails_when_its_turn_comes_is_refused_and_said(tmp_path):
    """The settings are checked when asked for and again when the run starts: a corpus
    replaced in between (its language gone) refuses the run, with the run's own message, and
    the queue goes on."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db, env=STALL)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            other = client.post("/api/corpora", files={"file": ("other.tsv", b"eng_Latn\tkor_Hang\na\tb\n")})
            assert other.status_code == 201, other.text
            running = client.post("/api/runs", json={**SLOW, "corpus": "tiny"}).json()["run"]
            wait_for_progress(client, running)
            doomed = client.post("/api/runs", json={**QUICK, "corpus": "other",
                                                    "languages": ["kor_Hang"]}).json()
            after = client.post("/api/runs", json={**QUICK, "corpus": "tiny"}).json()
            replaced = client.post("/api/corpora", files={"file": ("other.tsv", b"eng_Latn\tfra_Latn\na\tb\n")},
                                   data={"replace": "true"})
            assert replaced.json()["status"] == "replaced", replaced.text
            client.delete(f"/api/runs/{running}")
            refused = wait_for_queued(client, doomed["id"], {"started", "refused"})
            assert refused["status"] == "refused" and refused["run"] is None
            assert "changed since the run was queued" in refused["error"], refused
            next_one = wait_for_queued(client, after["id"], {"started", "refused"})
            assert next_one["status"] == "started"
            client.delete(f"/api/runs/{next_one['run']}")
    finally:
        server.stop()


@pytest.mark.slow
def test_a_queued_run_whose_corpus_was_replaced_with_the_same_languages_is_refused(tmp_path):
    """Issue 50, item 7: the run is pinned to the corpus's content when it is queued. A
    replacement that keeps every language (so every setting still checks) refuses it when its
    turn comes, rather than running it on the new content; the queue goes on."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db, env=STALL)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            old = b"eng_Latn\tfra_Latn\nthe cat sat\tle chat\nthe dog ran\tle chien\n"
            new = b"eng_Latn\tfra_Latn\nother words\tautres mots\nmore text\tplus de texte\n"
            made = client.post("/api/corpora", files={"file": ("other.tsv", old)})
            assert made.status_code == 201, made.text
            running = client.post("/api/runs", json={**SLOW, "corpus": "tiny"}).json()["run"]
            wait_for_progress(client, running)  # held: the runs below wait in the queue
            pinned = client.post("/api/runs", json={**QUICK, "corpus": "other"}).json()
            assert pinned["status"] == "waiting", pinned
            after = client.post("/api/runs", json={**QUICK, "corpus": "tiny"}).json()
            replaced = client.post("/api/corpora", files={"file": ("other.tsv", new)},
                                   data={"replace": "true"})
            assert replaced.json()["status"] == "replaced", replaced.text
            client.delete(f"/api/runs/{running}")
            refused = wait_for_queued(client, pinned["id"], {"started", "refused"})
            assert refused["status"] == "refused" and refused["run"] is None, refused
            assert "corpus 'other' changed since the run was queued" in refused["error"], refused
            assert [run["id"] for run in client.get("/api/runs").json()
                    if run["corpus"] == "other"] == []  # nothing ran on the new content
            next_one = wait_for_queued(client, after["id"], {"started", "refused"})
            assert next_one["status"] == "started", next_one
            client.delete(f"/api/runs/{next_one['run']}")
    finally:
        code, _, stderr = server.stop()
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_a_queued_run_whose_training_source_was_registered_again_is_refused(tmp_path):
    """Item 7's kind, for training sources: a run queued with `train_on` is pinned to the
    source as it was registered then. Registered again with other files while the run waited,
    the run trained on the new files without a word; it is refused, and the queue goes on."""
    from test_sources import make_source

    from analyzer.store import open_db

    db = make_served_db(tmp_path, run=False)
    texts = {lang: [[f"{lang} words number {i}" for i in range(40)]] for lang in TINY}
    make_source(open_db(db), tmp_path / "mono", texts, [("text", None)])
    server = Server(db, env=STALL)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            running = client.post("/api/runs", json=SLOW).json()["run"]
            wait_for_progress(client, running)  # held: the run below waits in the queue
            pinned = client.post("/api/runs", json={**QUICK, "train_on": "mono"}).json()
            assert pinned["status"] == "waiting", pinned
            other = {lang: [[f"other {lang} text {i}" for i in range(40)]] for lang in TINY}
            make_source(open_db(db), tmp_path / "other", other, [("text", None)])
            client.delete(f"/api/runs/{running}")
            refused = wait_for_queued(client, pinned["id"], {"started", "refused"})
            assert refused["status"] == "refused" and refused["run"] is None, refused
            assert "training source 'mono' changed since the run was queued" in refused["error"]
            assert [run["id"] for run in client.get("/api/runs").json()] == [running]
    finally:
        code, _, stderr = server.stop()
    assert "Traceback" not in stderr
