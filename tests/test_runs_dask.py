"""Runs on a Dask cluster: the same results byte for byte as the local pool, on a LocalCluster
and on a real `dask scheduler` with two `dask worker` processes; a worker killed mid-job; and
schedulers that cannot be used, refused before anything is stored."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.metrics import load_run_data
from analyzer.runs import RunError, RunSettings, execute_run
from analyzer.store import (
    list_runs,
    load_counts,
    load_merges,
    load_split_words,
    load_vocabulary_scripts,
    open_db,
    vocabularies,
)
from helpers import SAMPLE_CORPUS, SHARED_CORPORA, RunProcess, wait_until_gone

pytest.importorskip("distributed", reason="the dask executor needs pip install -e '.[dask]'")

runner = CliRunner()


def results(db, run_id) -> dict:
    """Everything a run stored that the executor could change: counts, merges, fairness data."""
    db = open_db(db.path) if hasattr(db, "path") else open_db(db)
    return {
        "counts": load_counts(db, run_id),
        "merges": {(v.scope, v.pretokenizer): load_merges(db, run_id, v.scope, v.pretokenizer)
                   for v in vocabularies(db, run_id) if v.kind.trained},
        "fairness": load_run_data(db, run_id).fairness,
    }


@pytest.mark.slow
@pytest.mark.cluster
def test_a_local_dask_cluster_gives_the_pool_s_results(tiny_db):
    settings = dict(sizes=[270, 300], parity=True, cross=True, pretokenizers=["none", "words"],
                    weights={"eng": 2}, jobs=2)
    pool = execute_run(tiny_db, RunSettings(**settings))
    dask = execute_run(tiny_db, RunSettings(**settings, executor="dask"))
    assert results(tiny_db, dask) == results(tiny_db, pool)


@pytest.mark.slow
@pytest.mark.cluster
def test_unigram_and_wordpiece_jobs_run_on_the_cluster_one_size_each(tiny_db):
    pytest.importorskip("tokenizers")
    from analyzer.store import model_digests

    settings = dict(sizes=[520, 600], algorithms=["unigram", "wordpiece"], pretokenizers=["words"],
                    jobs=2)
    pool = execute_run(tiny_db, RunSettings(**settings))
    dask = execute_run(tiny_db, RunSettings(**settings, executor="dask"))
    found = {run_id: results(tiny_db, run_id) for run_id in (pool, dask)}
    assert found[dask]["counts"] == found[pool]["counts"]
    assert found[dask]["merges"] == found[pool]["merges"]
    # Unigram numbers its pieces by score, whose last bits may differ from one training to
    # the next: how often each token occurs is the same, under ids that may be permuted.
    histograms = {run_id: {key: {lang: sorted(h.values()) if "unigram" in key[0] else h
                                 for lang, h in by_lang.items()}
                           for key, by_lang in found[run_id]["fairness"].histograms.items()}
                  for run_id in (pool, dask)}
    assert histograms[dask] == histograms[pool]
    digests = {run_id: model_digests(tiny_db, run_id) for run_id in (pool, dask)}
    assert [m["size"] for m in digests[dask][("unigram", "words")]] == [520, 600]
    # WordPiece's training is the same in every process, byte for byte (Unigram's scores may
    # differ in their last bits: its counts, compared above, do not).
    assert {key: models for key, models in digests[dask].items() if "wordpiece" in key[0]} == \
        {key: models for key, models in digests[pool].items() if "wordpiece" in key[0]}


@pytest.mark.cluster
@pytest.mark.parametrize("scheduler, message", [
    ("not a url", "is not a Dask scheduler address"),
    ("tcp://127.0.0.1", "is not a Dask scheduler address"),
    ("http://127.0.0.1:8786", "is not a Dask scheduler address"),
])
def test_a_scheduler_address_that_is_not_one_is_refused(tiny_db, scheduler, message):
    with pytest.raises(RunError, match=message):
        execute_run(tiny_db, RunSettings(sizes=[300], executor="dask", scheduler=scheduler))
    assert list_runs(tiny_db) == []


@pytest.mark.cluster
def test_an_unreachable_scheduler_is_a_clear_error_within_seconds(tiny_db_path):
    start = time.monotonic()
    result = runner.invoke(app, ["run", "--vocab", "300", "--scheduler", "tcp://127.0.0.1:9",
                                 "--db", str(tiny_db_path)])
    assert result.exit_code == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in result.output
    assert "Traceback" not in result.output
    assert time.monotonic() - start < 60  # a guard against a hang, not a timing assertion
    assert json.loads(runner.invoke(app, ["runs", "--json", "--db", str(tiny_db_path)]).stdout) == []
    refused = runner.invoke(app, ["run", "--vocab", "300", "--scheduler", "tcp://h:1",
                                  "--executor", "local", "--db", str(tiny_db_path)])
    assert refused.exit_code == 1 and "set --executor to dask" in refused.output


class Cluster:
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1, started by the real commands."""

    def __init__(self, env: dict | None = None):
        # The `dask` command of this interpreter's environment (beside it), even when that
        # environment's bin folder is not on PATH.
        beside = Path(sys.executable).with_name("dask")
        dask = str(beside) if beside.exists() else shutil.which("dask")
        if dask is None:
            pytest.skip("no `dask` command (pip install -e '.[dask]')")
        quiet = ["--no-dashboard"]
        self.processes = [RunProcess("scheduler", "--host", "127.0.0.1", "--port", "0", *quiet,
                                     program=[dask], env=env)]
        # The scheduler says where it listens once it does: an observed line, not a delay.
        self.address = self.processes[0].wait_for("Scheduler at:").split("Scheduler at:")[1].strip()
        for name in ("a", "b"):
            self.processes.append(RunProcess("worker", self.address, "--nworkers", "1", "--nthreads",
                                             "1", "--name", name, "--host", "127.0.0.1", *quiet,
                                             program=[dask], env=env))
        from distributed import Client

        with Client(self.address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=120)

    def stop(self) -> None:
        for run in self.processes:
            if run.process.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
            run.finish(timeout=30)


def corpus_db(folder: Path) -> Path:
    """UDHR when ../shared has it (the issue's test), else the shipped sample."""
    udhr = SHARED_CORPORA / "udhr" / "text"
    db = folder / "cluster.db"
    source = udhr if udhr.is_dir() else SAMPLE_CORPUS
    assert runner.invoke(app, ["ingest", str(source), "--db", str(db)]).exit_code == 0
    return db


def cli_run(db: Path, *args: str) -> int:
    done = subprocess.run([sys.executable, "-m", "analyzer", "run", "--vocab", "300,600", "--parity",
                           "--no-report", "--json", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["run"]


@pytest.mark.slow
def test_a_run_on_a_real_scheduler_and_two_workers_equals_a_local_run(tmp_path):
    db = corpus_db(tmp_path)
    cluster = Cluster()
    try:
        remote = cli_run(db, "--scheduler", cluster.address)
    finally:
        cluster.stop()
    local = cli_run(db, "--jobs", "2")
    assert results(db, remote) == results(db, local)


@pytest.mark.slow
def test_a_worker_killed_mid_job_is_replaced_and_the_run_completes(tmp_path):
    db = corpus_db(tmp_path)
    marker = tmp_path / "stalled.pid"
    os.mkfifo(marker)  # the first job to start writes its process id here, then waits
    cluster = Cluster(env={"ANALYZER_TEST_STALL_ONCE": str(marker)})
    try:
        run = RunProcess("run", "--vocab", "300,600", "--parity", "--no-report", "--json",
                         "--scheduler", cluster.address, "--db", str(db))
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(marker.read_text()), daemon=True)
        reader.start()
        reader.join(300)  # returns when a job has begun (the bound only guards against a hang)
        assert found, "no job began: " + "".join(run.stderr)
        os.kill(int(found[0]), signal.SIGKILL)  # the worker process running that job
        code, stdout, stderr = run.finish(timeout=600)
    finally:
        cluster.stop()
    assert code == 0, stderr
    remote = json.loads(stdout)["run"]
    local = cli_run(db, "--jobs", "2")
    assert results(db, remote) == results(db, local)
    assert [r.status for r in list_runs(open_db(db))] == ["complete", "complete"]


@pytest.mark.slow
@pytest.mark.cluster
def test_ctrl_c_cancels_the_cluster_s_jobs_and_marks_the_run_interrupted(tiny_db_path):
    run = RunProcess("run", "--vocab", "60000", "--executor", "dask", "--jobs", "2",
                     "--db", str(tiny_db_path), env={"ANALYZER_TEST_STALL": "1"})
    run.wait_for("training")
    run.process.send_signal(signal.SIGINT)
    code, _, stderr = run.finish(timeout=300)
    assert code == 130 and "marked interrupted" in stderr and "Traceback" not in stderr
    assert wait_until_gone(run.pid) == []  # the local cluster's workers ended with the command
    [found] = list_runs(open_db(tiny_db_path))
    assert found.status == "interrupted"
    assert open_db(tiny_db_path).execute("SELECT count(*) FROM vocabularies").fetchone()[0] == 0


@pytest.mark.slow
@pytest.mark.cluster
def test_a_local_cluster_run_prints_progress_and_nothing_of_dask_s(tiny_db_path):
    """No dashboard-port warning (8787 taken here on purpose), no large-graph warning: the
    texts' one graph is large by design (see analyzer/runs/cluster.py)."""
    import socket

    with socket.socket() as taken:
        try:
            taken.bind(("", 8787))
            taken.listen()
        except OSError:
            pass  # already taken by something else: the same test
        code, _, stderr = RunProcess("run", "--vocab", "300", "--executor", "dask", "--jobs", "2",
                                     "--no-report", "--db", str(tiny_db_path)).finish(timeout=300)
    assert code == 0, stderr
    assert "Warning" not in stderr and "warn" not in stderr.lower(), stderr
    assert "8787" not in stderr and "large graph" not in stderr


@pytest.mark.slow
def test_texts_larger_than_dask_s_graph_warning_go_once_without_it():
    import warnings

    from analyzer.identity import VocabularyId
    from analyzer.runs.cluster import connect
    from analyzer.runs.plan import JobPlan

    texts = {"eng_Latn": [f"the cat sat {i} " * 60 for i in range(12_000)],  # distinct: pickle
             "rus_Cyrl": [f"кот сидел {i} " * 60 for i in range(12_000)]}   # keeps each (20 MB)
    plan = JobPlan(VocabularyId.shared(), ["eng_Latn", "rus_Cyrl"], ["eng_Latn", "rus_Cyrl"],
                   [0, 1], [0, 1], [260], "lexicographic", 2)
    with warnings.catch_warnings(record=True) as seen, connect(None, 1) as executor:
        warnings.simplefilter("always")
        [record] = executor.run([plan], texts)
    assert record.merges_learned > 0
    assert [str(w.message) for w in seen if "large graph" in str(w.message)] == []


@pytest.mark.slow
@pytest.mark.cluster
def test_production_tokenizers_are_measured_on_the_cluster_s_workers(tiny_db, catalog_store):
    """Each tokenizer a task on a worker (resolved there from its spec): the local run's
    counts, words split, scripts and engines."""
    settings = dict(sizes=[], tokenizers=["cl100k_base", "o200k_base"], jobs=2)
    local = execute_run(tiny_db, RunSettings(**settings))
    dask = execute_run(tiny_db, RunSettings(**settings, executor="dask"))
    assert results(tiny_db, dask) == results(tiny_db, local)
    for read in (load_split_words, load_vocabulary_scripts):
        assert read(tiny_db, dask) == read(tiny_db, local) != {}
    assert [(v.scope, v.engine) for v in vocabularies(tiny_db, dask)] == \
        [(v.scope, v.engine) for v in vocabularies(tiny_db, local)]
