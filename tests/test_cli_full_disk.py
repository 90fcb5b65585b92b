"""A full disk, at every moment a command writes: a message that says the disk is full (never
"damaged", never a bug), exit 1, nothing half-written, and a finished run's results kept where
there is room, to be stored later."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sqlite_utils import Database

from helpers import RunProcess, cli_output

PAUSE = "ANALYZER_TEST_PAUSE_AT"


def analyzer(db: Path, *args: str, env: dict | None = None) -> tuple[int, str, str]:
    return RunProcess(*args, "--db", str(db), env=env).finish()


def paused_run(db: Path, go: Path, cache: Path, *args: str) -> RunProcess:
    """A run that stops before storing its results until the test writes to `go`."""
    os.mkfifo(go)
    run = RunProcess("run", "--vocab", "300,512", "--jobs", "1", "--no-report", *args,
                     "--db", str(db), env={PAUSE: f"store_results:{go}", "XDG_CACHE_HOME": str(cache)})
    run.wait_for("analyzer-test: paused before store_results")
    return run


@pytest.mark.slow
def test_a_full_disk_at_the_final_write_keeps_the_results_where_there_is_room(small_disk, tmp_path):
    db = small_disk.path / "a.db"
    cli_output(db, "ingest")
    run = paused_run(db, tmp_path / "go", tmp_path / "cache")
    small_disk.fill()
    (tmp_path / "go").write_text("go\n")
    code, _, stderr = run.finish()
    message = " ".join(stderr.split())
    assert code == 1, stderr
    (kept,) = (tmp_path / "cache" / "analyzer" / "pending").glob("a.db.run-1.*.pending.json.gz")
    assert "is full" in message and f"They are kept in {kept}" in message, message
    assert "damaged" not in message and "bug" not in message
    assert kept.is_file()

    small_disk.free()
    runs = json.loads(cli_output(db, "runs", "--json"))  # the run's process is gone: it is said
    assert runs[0]["status"] == "interrupted" and str(kept) in runs[0]["error"]
    assert "Stored the results of run 1" in cli_output(db, "recover", kept)
    recovered = json.loads(cli_output(db, "show", "1", "--json"))

    fresh = tmp_path / "fresh.db"
    cli_output(fresh, "ingest")
    cli_output(fresh, "run", "--vocab", "300,512", "--jobs", "1", "--no-report")
    assert recovered["records"] == json.loads(cli_output(fresh, "show", "1", "--json"))["records"]


def test_with_no_room_anywhere_the_loss_is_said(small_disk, tiny_db, monkeypatch):
    """Every place a pending file may go is full: nothing can be kept, and the message says
    so instead of naming a file that does not exist."""
    import analyzer.store.pending as pending
    from analyzer.runs import ResultsNotStored, RunSettings, execute_run
    from analyzer.store import DiskFull

    monkeypatch.setattr(pending, "pending_paths", lambda *args: [
        small_disk.path / "beside" / "a.pending", small_disk.path / "cache" / "a.pending"])
    small_disk.fill()

    def full(*args, **kwargs):
        raise DiskFull("the disk holding tiny.db is full")
    monkeypatch.setattr("analyzer.runs.execute.finish_run", full)
    with pytest.raises(ResultsNotStored) as raised:
        execute_run(tiny_db, RunSettings(sizes=[300], jobs=1))
    message = str(raised.value)
    assert "could not be kept anywhere either" in message and "they are lost" in message
    assert "kept in" not in message and str(small_disk.path / "cache") in message


@pytest.mark.slow
def test_reads_on_a_full_disk_say_the_disk_is_full(small_disk):
    db = small_disk.path / "a.db"
    cli_output(db, "ingest")
    cli_output(db, "run", "--vocab", "300", "--jobs", "1", "--no-report")
    for leftover in small_disk.path.glob("a.db-*"):  # as after the last connection closed
        leftover.unlink()
    small_disk.fill()
    for command in (["runs"], ["show", "1"], ["corpora", "--json"]):
        code, _, stderr = analyzer(db, *command)
        message = " ".join(stderr.split())
        assert code == 1, (command, stderr)
        assert f"the disk holding {db} is full" in message and "damaged" not in message, command


@pytest.mark.slow
def test_an_ingest_onto_a_full_disk_changes_nothing(small_disk, tmp_path, tiny_corpus):
    db = small_disk.path / "a.db"
    cli_output(db, "ingest")
    before = list(Database(db).iterdump())
    small_disk.fill()
    code, _, stderr = analyzer(db, "ingest", str(tiny_corpus))
    assert code == 1 and "is full" in " ".join(stderr.split()), stderr
    small_disk.free()
    assert list(Database(db).iterdump()) == before


@pytest.mark.slow
def test_a_report_or_an_export_onto_a_full_disk_leaves_no_half_file(small_disk, tmp_path):
    db = tmp_path / "a.db"
    cli_output(db, "ingest")
    cli_output(db, "run", "--vocab", "300", "--jobs", "1", "--no-report")
    earlier = small_disk.path / "run.json"
    earlier.write_text("an earlier export\n")
    small_disk.fill()
    code, _, stderr = analyzer(db, "export", "1", "--out", str(earlier), "--replace")
    assert code == 1 and "the disk is full" in " ".join(stderr.split()), stderr
    assert earlier.read_text() == "an earlier export\n"
    code, _, stderr = analyzer(db, "report", "1", "--out", str(small_disk.path / "reports"))
    assert code == 1 and "the disk is full" in " ".join(stderr.split()), stderr
    leftovers = [p.name for p in small_disk.path.rglob("*") if p.name.endswith(".partial")]
    assert leftovers == []
