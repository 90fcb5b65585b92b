"""Waits that never multiply (issue 68, item 4): every wait of a request (a thread for a write,
another process's lock on the database, a run's process ending) comes out of one budget, the
server's --lock-wait; requests wait for a lock together, never one behind another's wait, and
the pages never wait behind them; an interrupt answers within the budget; a client that sends
a run's request again with its Idempotency-Key starts nothing twice.

No test here measures time: each acts on an observed event (a request seen waiting for the
lock, a run's process paused at a known step) while the lock, or the process, is held."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import Server, make_served_db, problem_of, wait_for_progress, wait_for_status

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

QUICK = {"sizes": [280], "jobs": 1, "per_language": False}
WAIT = 120  # seconds a client waits for an answer: a guard against a hang, never a measure


class HeldLock:
    """Another process's write lock on the database (a connection of the test's own)."""

    def __init__(self, db):
        self.connection = sqlite3.connect(db, isolation_level=None)
        self.connection.execute("BEGIN IMMEDIATE")

    def release(self):
        if self.connection is not None:
            self.connection.rollback()
            self.connection.close()
            self.connection = None


def waiting_requests(server: Server, count: int) -> None:
    """Wait until `count` requests of the server have asked for the write lock (the hook's
    lines from the threads that serve requests, not its main thread or its queue's); fails if
    fewer come (a request kept from waiting)."""
    seen = 0
    while seen < count:
        line = server.run.wait_for("analyzer-test: BEGIN IMMEDIATE in ")
        seen += not any(thread in line for thread in ("MainThread", "analyzer-queue"))


@pytest.mark.slow
def test_requests_wait_for_a_lock_together_and_the_pages_do_not_wait_behind_them(tmp_path):
    """45 POSTs with the lock held 40 s answered in 5.4 to 41.1 s, one after another (each
    waited for the lock holding the run manager's lock), and GET / waited up to 28.5 s (every
    thread of the server held by them). Here the lock is held until the test has seen as many
    requests waiting for it at once as there are threads for writes, then seen the pages and
    reads answer while every POST still waits; then all are answered: one run, the others
    queued, none twice."""
    from analyzer.serve.waits import WRITE_THREADS

    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--lock-wait", "600", "--max-queue", "100",
                    env={"ANALYZER_TEST_TRACE_LOCKS": "1", "ANALYZER_TEST_STALL": "1"})
    posts = 44  # more than the writes' threads, and than the server's 40 threads for the rest
    try:
        assert httpx.get(server.url + "/healthz", timeout=WAIT).status_code == 200
        lock = HeldLock(db)
        answers: list = []
        with ThreadPoolExecutor(posts) as pool:
            futures = [pool.submit(httpx.post, server.url + "/api/runs",
                                   json={**QUICK, "seed": seed}, timeout=WAIT)
                       for seed in range(posts)]
            waiting_requests(server, WRITE_THREADS)  # all waiting for the lock at once
            index = httpx.get(server.url + "/", timeout=WAIT)
            runs = httpx.get(server.url + "/api/runs", timeout=WAIT)
            assert index.status_code == 200 and runs.status_code == 200
            assert not any(future.done() for future in futures)  # the POSTs all still wait
            lock.release()
            answers = [future.result() for future in futures]
        assert all(answer.status_code == 202 for answer in answers), [a.text for a in answers]
        started = [a.json()["run"] for a in answers if a.json()["status"] == "running"]
        queued = [a.json()["id"] for a in answers if a.json().get("status") == "waiting"]
        assert len(started) == 1 and len(queued) == posts - 1 == len(set(queued))
    finally:
        lock.release()
        server.stop()


@pytest.mark.slow
def test_an_interrupt_answers_within_the_lock_wait_and_the_run_is_not_killed(tmp_path):
    """DELETE /api/runs/{id} ignored --lock-wait: it waited for the run's process, which waited
    for the lock to mark its run interrupted (200 after 31.2 s); held longer, the process was
    killed. Here the lock is held while the interrupt is asked: it answers 202 (interrupting)
    while the lock is still held, and once it is released the run is marked interrupted by its
    own process, as on Ctrl-C, not failed as a killed one would be."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--lock-wait", "1",  # the run's own patience: longer than any test
                    env={"ANALYZER_TEST_STALL": "1", "ANALYZER_BUSY_TIMEOUT": "600"})
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            run_id = client.post("/api/runs", json={**QUICK, "sizes": [60000]}).json()["run"]
            wait_for_progress(client, run_id)
            lock = HeldLock(db)
            try:
                stopping = client.delete(f"/api/runs/{run_id}")
                assert stopping.status_code == 202, stopping.text
                assert stopping.json()["status"] == "interrupting"
                assert client.get(f"/api/runs/{run_id}").json()["status"] == "running"
                again = client.delete(f"/api/runs/{run_id}")  # asked twice: one SIGTERM
                assert again.status_code == 202, again.text
            finally:
                lock.release()
            ended = wait_for_status(client, run_id, {"interrupted", "failed"})
            assert ended["status"] == "interrupted" and ended["error"] == "stopped by SIGTERM"
    finally:
        server.stop()


@pytest.mark.slow
def test_interrupting_a_run_that_has_just_completed_is_a_conflict(tmp_path):
    """Its process still alive, its run complete: the interrupt answered 200 "complete" (as if
    it had stopped something); it is a 409, as for any complete run, and the results stay."""
    pipe = tmp_path / "go"
    os.mkfifo(pipe)
    db = make_served_db(tmp_path, run=False)
    server = Server(db, env={"ANALYZER_TEST_PAUSE_AT": f"analyzer.serve.runner._said_complete:{pipe}"})
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            run_id = client.post("/api/runs", json=QUICK).json()["run"]
            server.run.wait_for("paused before _said_complete")  # complete; its process alive
            answer = client.delete(f"/api/runs/{run_id}")
            assert "complete" in problem_of(answer, 409)
            assert answer.json()["title"] == "Run not in progress"
            threading.Thread(target=lambda: pipe.write_text("go\n"), daemon=True).start()
            assert wait_for_status(client, run_id, {"complete"})["records"]
    finally:
        os.close(os.open(pipe, os.O_RDONLY | os.O_NONBLOCK))  # a writer still waiting goes on
        server.stop()


@pytest.mark.slow
def test_a_run_request_sent_again_with_its_key_starts_nothing_twice(tmp_path):
    """A client with an 8 s timeout retrying every 2 s created 3 identical runs. The retry,
    sent while the first still waits for the lock, waits for the first's answer and gets it;
    sent after, it is replayed; the same key with other settings is refused."""
    db = make_served_db(tmp_path, run=False)
    server = Server(db, "--lock-wait", "600", env={"ANALYZER_TEST_TRACE_LOCKS": "1",
                                                    "ANALYZER_TEST_STALL": "1"})
    key = {"Idempotency-Key": "5d1e8c64-retry"}
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as client:
            lock = HeldLock(db)
            try:
                with ThreadPoolExecutor(2) as pool:
                    first = pool.submit(client.post, "/api/runs", json=QUICK, headers=key)
                    waiting_requests(server, 1)
                    retry = pool.submit(client.post, "/api/runs", json=QUICK, headers=key)
                    lock.release()
                    first, retry = first.result(), retry.result()
            finally:
                lock.release()
            assert first.status_code == retry.status_code == 202, (first.text, retry.text)
            assert first.json() == retry.json() and first.json()["status"] == "running"
            assert retry.headers["idempotency-replayed"] == "true"
            later = client.post("/api/runs", json=QUICK, headers=key)
            assert later.json() == first.json() and later.headers["idempotency-replayed"] == "true"
            other = client.post("/api/runs", json={**QUICK, "seed": 7}, headers=key)
            assert "came before with other settings" in problem_of(other, 422)
            bad = client.post("/api/runs", json=QUICK, headers={"Idempotency-Key": "a b"})
            assert "Idempotency-Key" in problem_of(bad, 422)
            assert [run["id"] for run in client.get("/api/runs").json()] == [first.json()["run"]]
            assert client.get("/api/queue").json() == []
            fresh = client.post("/api/runs", json=QUICK, headers={"Idempotency-Key": "another"})
            assert fresh.json()["status"] == "waiting" and "idempotency-replayed" not in fresh.headers
    finally:
        server.stop()


@pytest.mark.slow
def test_a_server_started_while_another_process_holds_the_lock_answers_at_once(tmp_path):
    """Its start-up put the queue's starting entries back to waiting on the event loop, which
    waited --lock-wait for the lock before the server answered anything at all."""
    db = make_served_db(tmp_path, run=False)
    lock = HeldLock(db)
    try:
        server = Server(db, "--lock-wait", "600")
        try:
            assert httpx.get(server.url + "/healthz", timeout=WAIT).status_code == 200
            assert httpx.get(server.url + "/api/corpora", timeout=WAIT).status_code == 200
        finally:
            server.stop()
    finally:
        lock.release()


def test_a_long_poll_with_a_count_from_before_a_restart_answers_at_once(tiny_db):
    """`after` above the server's count (a page that watched the server before it restarted):
    the poll waited for the next change, up to `wait`; its view is stale whatever happens, so it
    is answered now. (Bounded here by 60 s: a hang, never a measure.)"""
    from analyzer.serve.runner import RunManager

    runs = RunManager(tiny_db)
    runs.changes = 3
    assert asyncio.run(asyncio.wait_for(runs.wait_for_change(57, 3600), 60)) == 3
    assert asyncio.run(runs.wait_for_change(3, 0)) == 3


def test_a_budget_is_spent_by_every_wait_of_a_request(tmp_path):
    """A request's waits share one budget: a write that waited for the lock until the budget ran
    out leaves none for the next, which is refused at once, saying the server's --lock-wait."""
    from analyzer.serve.state import served_lock_wait
    from analyzer.store import DatabaseBusy, WaitBudget, enqueue_run, open_db, reconnect

    db = open_db(tmp_path / "a.db")
    budget = WaitBudget(0.2)
    request = reconnect(db, lock_wait=served_lock_wait(60, budget))
    lock = HeldLock(tmp_path / "a.db")
    try:
        with pytest.raises(DatabaseBusy, match="waited 0.2 s in all"):
            enqueue_run(request, {"sizes": [300]}, "x")
        assert budget.left() == 0  # spent waiting: nothing left for another wait
        with pytest.raises(DatabaseBusy, match="--lock-wait"):
            enqueue_run(request, {"sizes": [300]}, "x")
    finally:
        lock.release()
    assert budget.left() == 0
    assert enqueue_run(request, {"sizes": [300]}, "x").id == 1  # the lock free: no wait needed
